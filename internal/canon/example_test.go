package canon_test

import (
	"fmt"
	"math"

	"github.com/reprompt/reprompt/internal/canon"
)

func ExampleEncode() {
	a := map[string][]float64{"x": {1, math.NaN()}, "a": {math.Copysign(0, -1)}}
	b := map[string][]float64{"a": {0}, "x": {1, math.NaN()}}
	fmt.Println(canon.Encode(a))
	fmt.Println(canon.Encode(a) == canon.Encode(b))
	// Output:
	// {"a": [0], "x": [1, NaN]}
	// true
}
