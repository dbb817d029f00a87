//go:build tools

// Package karmada pins Karmada's modules for the benchmark's peer: its
// control plane is built from them into bin/karmada/VERSION ('make
// karmada'), in a module of its own so that placer's go.mod stays clean.
package karmada

import (
	_ "github.com/karmada-io/karmada/cmd/aggregated-apiserver"
	_ "github.com/karmada-io/karmada/cmd/controller-manager"
	_ "github.com/karmada-io/karmada/cmd/scheduler"
	_ "github.com/karmada-io/karmada/cmd/scheduler-estimator"
	_ "github.com/karmada-io/karmada/cmd/webhook"
)
