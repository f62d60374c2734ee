package archive

import "golang.org/x/sys/unix"

// exchange swaps the directory entries a and b in one atomic step
// (renamex_np with RENAME_SWAP): every path lookup sees both before or
// both after.
func exchange(a, b string) error {
	return unix.RenamexNp(a, b, unix.RENAME_SWAP)
}
