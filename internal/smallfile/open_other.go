//go:build !unix

package smallfile

import "os"

// openFlags: the systems without O_NONBLOCK have no FIFO that a path names
// and an open waits on; the check after the open still refuses what is not
// a regular file.
const openFlags = os.O_RDONLY
