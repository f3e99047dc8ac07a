package effects

// Manager is the effects manager, for the tests of package effects_test.
type Manager = manager

// IsAlways is isAlways, for the tests of package effects_test.
var IsAlways = isAlways
