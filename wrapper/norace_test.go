//go:build !race

package wrapper

const raceEnabled = false
