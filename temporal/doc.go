// Package temporal runs prompt functions as Temporal workflows.
package temporal
