//go:build !cqx_release_stamp

package plugin

// releaseStamp is empty in a build other than the package command's (see
// version.go).
var releaseStamp stamp
