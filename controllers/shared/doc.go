// Package shared holds what placer's controllers share: the Workload
// status write (one merge patch, conflicts foreseen from the cache), the
// Workloads a controller wrote until its cache catches up, the trigger
// through which code outside controller-runtime enqueues, the watches of
// single management objects, and the Workload indexes. It imports no
// controller.
package shared
