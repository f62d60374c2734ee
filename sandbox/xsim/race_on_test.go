//go:build race

package xsim

const raceEnabled = true
