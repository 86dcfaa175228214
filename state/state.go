// Package state saves and loads jobwatch's state directory: the job model
// and every source's read position, in one file written atomically.
package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"jobwatch/model"
)

// FileName is the state file inside the state directory.
const FileName = "state.json"

// Store is an open state directory. It holds an exclusive lock on it, so two
// jobwatch processes never share one.
type Store struct {
	dir  string
	lock *os.File
}

// Open creates the state directory if needed (mode 0700) and locks it.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory %s: %w", dir, err)
	}
	lockPath := filepath.Join(dir, "lock")
	fd, err := unix.Open(lockPath, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state lock %s: %w", lockPath, err)
	}
	f := os.NewFile(uintptr(fd), lockPath)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("state directory %s is in use by another jobwatch", dir)
		}
		return nil, fmt.Errorf("state lock %s: %w", lockPath, err)
	}
	return &Store{dir: dir, lock: f}, nil
}

// Path is the state file's path.
func (s *Store) Path() string { return filepath.Join(s.dir, FileName) }

// Load reads the saved state; it returns nil and no error when there is none
// yet. A state file that cannot be read is an error naming it: jobwatch never
// silently starts over, which would count every record again.
func (s *Store) Load() (*model.Snapshot, error) {
	data, err := readNoFollow(s.Path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading state %s: %w", s.Path(), err)
	}
	var snap model.Snapshot
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&snap); err != nil {
		return nil, fmt.Errorf("state %s is corrupt (move it away to start over, which reads every source again): %w", s.Path(), err)
	}
	return &snap, nil
}

func readNoFollow(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(f)
	return b.Bytes(), err
}

// Save writes the state atomically: a temporary file in the same directory,
// fsynced, renamed over the old one, and the directory fsynced. A crash at
// any point leaves either the old state or the new one.
func (s *Store) Save(snap *model.Snapshot) error {
	data, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("encoding state: %w", err)
	}
	tmp, err := os.CreateTemp(s.dir, FileName+".tmp*")
	if err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("saving state %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("saving state %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("saving state %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), s.Path()); err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	d, err := os.Open(s.dir)
	if err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("saving state: syncing %s: %w", s.dir, err)
	}
	return nil
}

// Close releases the directory lock.
func (s *Store) Close() error { return s.lock.Close() }
