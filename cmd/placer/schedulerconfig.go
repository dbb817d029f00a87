package main

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/scheduler"
)

// The manager's scheduler configuration, where the chart (manager.
// schedulerConfig) and an administrator's kustomization put it: a
// ConfigMap the manager mounts for --scheduler-config, which explain and
// drain read from the cluster.
const (
	SchedulerConfigMap = "placer-scheduler-config"
	SchedulerConfigKey = "scheduler-config.yaml"
)

// schedulerConfigFlags say where the manager's scheduler configuration is:
// a local file, else the ConfigMap in placer's namespace.
type schedulerConfigFlags struct {
	file      string
	namespace string
}

func (f *schedulerConfigFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.file, "scheduler-config", "", "the manager's scheduler configuration file; when empty, read from the ConfigMap "+SchedulerConfigMap+" in --placer-namespace, and the default profile when there is none")
	fs.StringVar(&f.namespace, "placer-namespace", "placer-system", "the namespace placer's manager runs in")
}

// load returns the manager's scheduler configuration, and a note when it
// had to assume the default one because the ConfigMap is not readable.
func (f *schedulerConfigFlags) load(ctx context.Context, c client.Client) (*scheduler.Configuration, string, error) {
	if f.file != "" {
		conf, err := scheduler.LoadConfiguration(f.file)
		return conf, "", err
	}
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: f.namespace, Name: SchedulerConfigMap}
	switch err := c.Get(ctx, key, cm); {
	case kerrors.IsNotFound(err):
		// The manager runs with its default profile too.
		return scheduler.DefaultConfiguration(), "", nil
	case kerrors.IsForbidden(err):
		return scheduler.DefaultConfiguration(), fmt.Sprintf("the manager's scheduler configuration (ConfigMap %s) is not readable with your rights: the default profile is assumed", key), nil
	case err != nil:
		return nil, "", errors.Wrapf(err, "cannot get ConfigMap %s", key)
	}
	b, ok := cm.Data[SchedulerConfigKey]
	if !ok {
		return nil, "", errors.Errorf("ConfigMap %s has no key %s", key, SchedulerConfigKey)
	}
	conf, err := scheduler.ParseConfiguration([]byte(b), "ConfigMap "+key.String())
	return conf, "", err
}
