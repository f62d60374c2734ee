package archive

import "golang.org/x/sys/unix"

// exchange swaps the directory entries a and b in one atomic step
// (renameat2 with RENAME_EXCHANGE): every path lookup sees both before or
// both after.
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
