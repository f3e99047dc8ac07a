// Package evalbroken does not build: reprompt eval run shows go test's
// error.
package evalbroken

import "testing"

func TestEval(t *testing.T) {
	var n int = "not a number"
	_ = n
}
