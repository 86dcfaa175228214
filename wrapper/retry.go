package wrapper

import "golang.org/x/sys/unix"

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}
