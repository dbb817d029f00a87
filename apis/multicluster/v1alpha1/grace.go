package v1alpha1

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeletionGrace is an object's AnnotationDeletionGracePeriod: whole
// seconds, zero or more; any other text is no grace period at all.
func DeletionGrace(o metav1.Object) (int64, bool) {
	v, ok := o.GetAnnotations()[AnnotationDeletionGracePeriod]
	if !ok {
		return 0, false
	}
	g, err := strconv.ParseInt(v, 10, 64)
	return g, err == nil && g >= 0
}

// SetDeletionGrace sets the object's AnnotationDeletionGracePeriod to g
// (a number this process formats, never text from elsewhere), and reports
// whether that changed it.
func SetDeletionGrace(o metav1.Object, g int64) bool {
	if had, ok := DeletionGrace(o); ok && had == g {
		return false
	}
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[AnnotationDeletionGracePeriod] = strconv.FormatInt(g, 10)
	o.SetAnnotations(a)
	return true
}
