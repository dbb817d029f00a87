// Package examples holds Workloads and clusters a user can apply. Every
// Workload example states where it must land, and why, in a comment:
//
//	# expect: CLUSTER — why
//
// or "# expect: Unschedulable — why". The sandbox applies them to its
// fleet and checks those statements; so does a test.
package examples

import (
	"embed"
	"io/fs"
	"regexp"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

//go:embed *.yaml
var files embed.FS

// Unschedulable is the expectation of a Workload that must fit nowhere.
const Unschedulable = "Unschedulable"

// Example is one Workload example and what it must do.
type Example struct {
	File     string
	Workload *v1alpha1.Workload
	// Expect is the cluster it must land on, or Unschedulable.
	Expect string
	// Why is the comment's reason.
	Why string
	// Needs are the file's other objects (ConfigMaps, Secrets,
	// ServiceAccounts the Workload's pods use), to create before it.
	Needs []*unstructured.Unstructured
}

var expectLine = regexp.MustCompile(`(?m)^# expect: (\S+)(?:\s+—\s+(.*))?$`)

// Workloads returns the Workload examples in file order.
func Workloads() ([]Example, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, errors.Wrap(err, "cannot list examples")
	}
	var out []Example
	for _, name := range names {
		b, err := files.ReadFile(name)
		if err != nil {
			return nil, errors.Wrapf(err, "cannot read %s", name)
		}
		var needs []*unstructured.Unstructured
		first := len(out)
		for _, doc := range strings.Split(string(b), "\n---\n") {
			tm := &metav1.TypeMeta{}
			if err := yaml.Unmarshal([]byte(doc), tm); err != nil {
				return nil, errors.Wrapf(err, "cannot decode %s", name)
			}
			if tm.APIVersion == "v1" && tm.Kind != "" {
				u := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
					return nil, errors.Wrapf(err, "cannot decode the %s in %s", tm.Kind, name)
				}
				needs = append(needs, u)
				continue
			}
			if tm.Kind != "Workload" {
				continue
			}
			w := &v1alpha1.Workload{}
			if err := yaml.UnmarshalStrict([]byte(doc), w); err != nil {
				return nil, errors.Wrapf(err, "cannot decode the Workload in %s", name)
			}
			m := expectLine.FindStringSubmatch(doc)
			if m == nil {
				return nil, errors.Errorf("%s: Workload %s has no '# expect: CLUSTER — why' comment", name, w.Name)
			}
			out = append(out, Example{File: name, Workload: w, Expect: m[1], Why: m[2]})
		}
		for i := first; i < len(out); i++ {
			out[i].Needs = needs
		}
	}
	return out, nil
}
