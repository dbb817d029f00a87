// Command crdtrim removes the descriptions that controller-gen copies from
// Kubernetes' own types (a pod template, a ServiceSpec) into placer's CRDs,
// keeping placer's own. The Workload CRD is 733 KB with them, more than the
// 262,144 bytes of the annotation 'kubectl apply' (client-side) writes;
// 'kubectl explain' still documents placer's fields, and Kubernetes' own
// fields are documented with Kubernetes.
//
// Usage: crdtrim -path spec.targetDeployment.template [-path …] FILE
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

type paths []string

func (p *paths) String() string     { return strings.Join(*p, ",") }
func (p *paths) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	var ps paths
	flag.Var(&ps, "path", "a property path below openAPIV3Schema (dot-separated) whose descendants lose their descriptions; repeatable")
	flag.Parse()
	if flag.NArg() != 1 || len(ps) == 0 {
		fmt.Fprintln(os.Stderr, "usage: crdtrim -path a.b.c [-path …] FILE")
		os.Exit(2)
	}
	if err := trim(flag.Arg(0), ps); err != nil {
		fmt.Fprintln(os.Stderr, "crdtrim:", err)
		os.Exit(1)
	}
}

func trim(file string, ps []string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	crd := map[string]any{}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		schema, _ := v.(map[string]any)["schema"].(map[string]any)
		root, _ := schema["openAPIV3Schema"].(map[string]any)
		for _, p := range ps {
			node := root
			for _, name := range strings.Split(p, ".") {
				props, _ := node["properties"].(map[string]any)
				node, _ = props[name].(map[string]any)
				if node == nil {
					return fmt.Errorf("%s: no property %s", file, p)
				}
			}
			strip(node, true)
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	if bytes.HasPrefix(b, []byte("---\n")) {
		out = append([]byte("---\n"), out...)
	}
	return os.WriteFile(file, out, 0o644)
}

// strip removes descriptions below node, keeping node's own.
func strip(node any, keep bool) {
	switch n := node.(type) {
	case map[string]any:
		if !keep {
			if _, ok := n["description"].(string); ok {
				delete(n, "description")
			}
		}
		for k, v := range n {
			if _, text := v.(string); k == "description" && text {
				continue
			}
			// A property named "description" is a schema: strip inside it.
			strip(v, false)
		}
	case []any:
		for _, v := range n {
			strip(v, false)
		}
	}
}
