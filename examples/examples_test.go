package examples

import (
	"testing"
)

func TestEveryWorkloadStatesWhereItLands(t *testing.T) {
	exs, err := Workloads()
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) < 12 {
		t.Fatalf("%d Workload examples, want at least 12", len(exs))
	}
	seen := map[string]bool{}
	for _, ex := range exs {
		if ex.Expect == "" || ex.Why == "" {
			t.Errorf("%s: expect %q, why %q", ex.File, ex.Expect, ex.Why)
		}
		if seen[ex.Workload.Name] {
			t.Errorf("%s: Workload name %s used twice", ex.File, ex.Workload.Name)
		}
		seen[ex.Workload.Name] = true
	}
}
