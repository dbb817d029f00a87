// Package controllers wires placer's logic to controller-runtime reconcilers.
package controllers
