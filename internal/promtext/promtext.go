// Package promtext reads Prometheus text pages (/metrics) for the tests
// and the benchmark, with the Prometheus parser: labels by name, in any
// order.
package promtext

import (
	"bytes"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Each calls f with the family, the labels and the sample of every series
// of the named families in a /metrics page.
func Each(page []byte, f func(family string, labels map[string]string, m *dto.Metric), families ...string) error {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	all, err := parser.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		return err
	}
	for _, name := range families {
		for _, m := range all[name].GetMetric() {
			l := make(map[string]string, len(m.GetLabel()))
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			f(name, l, m)
		}
	}
	return nil
}
