package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/placer-dev/placer/internal/join"
)

// memberFlags name the admin's kubeconfig of a member.
type memberFlags struct {
	kubeconfig, context string
}

func (m *memberFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&m.kubeconfig, "member-kubeconfig", "", "the admin's kubeconfig of the member (its exec plugins, if any, run here); the usual kubeconfig (KUBECONFIG, ~/.kube/config) when empty")
	fs.StringVar(&m.context, "member-context", "", "the member's context in that kubeconfig; its current context when empty")
}

// config is the admin's configuration of the member.
func (m *memberFlags) config() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if m.kubeconfig != "" {
		rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: m.kubeconfig}
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: m.context}).ClientConfig()
	return cfg, errors.Wrap(err, "cannot load the member's kubeconfig")
}

func newJoinCommand() *cobra.Command {
	f := &targetFlags{}
	var m memberFlags
	var o join.Options
	var opens, labels []string
	cmd := &cobra.Command{
		Use:   "join [NAMESPACE/]CLUSTER --member-context CONTEXT",
		Short: "Make a cluster a member: install the member side, the manager's identity and the KubernetesCluster",
		Long: `Join a cluster to the fleet, run by an admin of both clusters. In the member
(--member-kubeconfig, --member-context: the admin's own credentials, exec
plugins included, used here and never handed to the manager) it installs the
member side (--install: config/member, the agent, the candidate scheduler,
the CRDs and roles), makes the manager's identity a ServiceAccount
` + "placer-system/" + join.ServiceAccount + ` bound to the least-privilege roles, and opens
each --open NAMESPACE[=TENANT] to the Workloads of that management namespace
(the cluster's own namespace when no TENANT). In the management cluster
(--kubeconfig, --context, -n) it writes Secret CLUSTER-kubeconfig holding a
bound token of that ServiceAccount (--token-ttl), annotated so that the
manager renews it before it expires, and the KubernetesCluster. It never
replaces a Secret it did not write. Run it again to renew the token by hand.
'placer unjoin' reverses it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, key, err := f.target(args[0])
			if err != nil {
				return err
			}
			if o.Member, err = m.config(); err != nil {
				return err
			}
			o.Name, o.Namespace, o.Management = key.Name, key.Namespace, c
			if o.Labels, err = parseLabels(labels); err != nil {
				return err
			}
			for _, s := range opens {
				op, err := join.ParseOpening(s, key.Namespace)
				if err != nil {
					return err
				}
				o.Open = append(o.Open, op)
			}
			res, err := join.Join(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), res)
			return nil
		},
	}
	fs := cmd.Flags()
	f.register(fs, "")
	m.register(fs)
	fs.BoolVar(&o.Install, "install", false, "install the member side (config/member) in the member first")
	fs.StringVar(&o.Image, "image", "", "with --install, the image of placer's containers in the member (the release's when empty)")
	fs.StringArrayVar(&opens, "open", nil, "open a member namespace to the Workloads of a management namespace: NAMESPACE or NAMESPACE=TENANT (repeatable)")
	fs.BoolVar(&o.Dependencies, "dependencies", false, "let the opened namespaces' tenants copy the ConfigMaps, Secrets and ServiceAccounts their pods need there")
	fs.BoolVar(&o.Streams, "streams", false, "let kubectl logs, exec and attach of the opened namespaces' tenants' proxy pods reach their delegates there")
	fs.DurationVar(&o.TokenTTL, "token-ttl", join.DefaultTokenTTL, "lifetime of the manager's token (at least 10m); the manager renews it after --member-token-renewal of it")
	fs.StringVar(&o.Server, "member-server", "", "the member's API server as the manager reaches it, when not as the admin does")
	fs.StringVar(&o.Provider, "provider", "", "spec.provider of the KubernetesCluster (aws, gcp, azure, ...)")
	fs.StringArrayVar(&labels, "label", nil, "a label KEY=VALUE of the KubernetesCluster (repeatable)")
	return cmd
}

// parseLabels reads KEY=VALUE pairs.
func parseLabels(kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, errors.Errorf("--label %q: want KEY=VALUE", kv)
		}
		out[k] = v
	}
	return out, nil
}

func newUnjoinCommand() *cobra.Command {
	f := &targetFlags{}
	var m memberFlags
	var uninstall, keepMember bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "unjoin [NAMESPACE/]CLUSTER --member-context CONTEXT",
		Short: "Drain a member and take it out of the fleet",
		Long: `Unjoin a member: delete its KubernetesCluster and wait (--wait) while the
manager drains it (its Workloads move away, make-before-break, and what
placer sent there is removed), then delete the Secret 'placer join' wrote and,
in the member, the manager's ServiceAccount (which revokes its tokens) and
the bindings of its roles; with --uninstall the member side too. With
--keep-member the member is not touched (one that no longer answers).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, key, err := f.target(args[0])
			if err != nil {
				return err
			}
			o := join.UnjoinOptions{Name: key.Name, Namespace: key.Namespace, Management: c, Uninstall: uninstall, Wait: wait}
			if !keepMember {
				if o.Member, err = m.config(); err != nil {
					return err
				}
			}
			if err := join.Unjoin(cmd.Context(), o); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "KubernetesCluster %s unjoined\n", key)
			return nil
		},
	}
	fs := cmd.Flags()
	f.register(fs, "")
	m.register(fs)
	fs.BoolVar(&uninstall, "uninstall", false, "delete the member side (config/member) from the member too")
	fs.BoolVar(&keepMember, "keep-member", false, "leave the member as it is: only the management side is removed")
	fs.DurationVar(&wait, "wait", 10*time.Minute, "how long to wait for the drain")
	return cmd
}
