//go:build !race

package textpack

const raceEnabled = false
