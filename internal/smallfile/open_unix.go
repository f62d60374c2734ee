//go:build unix

package smallfile

import (
	"os"
	"syscall"
)

// openFlags open a FIFO without waiting for a writer (it is then refused);
// on a regular file O_NONBLOCK changes nothing.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
