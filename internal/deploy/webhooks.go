package deploy

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// WebhooksAt points every webhook of the installed
// MutatingWebhookConfigurations that calls a Service of placer's namespace
// at addr (host:port) instead, by URL: the manager runs as a process
// beside a local cluster, which has no pod network to reach a Service
// through. Path, rules, selectors, failure policy and caBundle stay as
// config/ has them.
func WebhooksAt(ctx context.Context, cfg *rest.Config, addr string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	list, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, item := range list.Items {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			mwc, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, item.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !pointAt(mwc, addr) {
				return nil
			}
			_, err = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, mwc, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func pointAt(mwc *admissionregistrationv1.MutatingWebhookConfiguration, addr string) bool {
	changed := false
	for i := range mwc.Webhooks {
		cc := &mwc.Webhooks[i].ClientConfig
		if cc.Service == nil || cc.Service.Namespace != Namespace {
			continue
		}
		cc.URL = ptr.To("https://" + addr + ptr.Deref(cc.Service.Path, "/"))
		cc.Service = nil
		changed = true
	}
	return changed
}
