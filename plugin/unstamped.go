//go:build !cqx_release_stamp

package plugin

// releaseStamp is empty but in the package command's builds (version.go).
var releaseStamp stamp
