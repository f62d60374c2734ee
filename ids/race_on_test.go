//go:build race

package ids

const raceEnabled = true
