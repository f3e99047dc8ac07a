package effects

// IsAlways is isAlways, for the tests of package effects_test.
var IsAlways = isAlways
