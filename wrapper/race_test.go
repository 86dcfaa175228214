//go:build race

package wrapper

// raceEnabled: the race detector is on (it makes memory use larger).
const raceEnabled = true
