package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"sync"
)

// A frame is one entry of the snapshot or the log: a 4-byte big-endian
// payload length, the CRC-32C (Castagnoli) of the payload, the payload (one
// JSON object). A frame whose length or checksum does not hold was not
// written completely (the tail of the log after a crash during a save) or
// was damaged.
const (
	frameHeader = 8
	// maxFrame bounds one frame's payload, so a damaged length cannot make
	// the reader allocate gigabytes.
	maxFrame = 256 << 20
)

// castagnoli is built on first use: making the table costs a fifth of a
// millisecond, which every command of the binary would pay at start-up.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

func appendFrame(buf, payload []byte) []byte {
	return append(appendFrameHeader(buf, payload), payload...)
}

// appendFrameHeader appends the header of payload's frame.
func appendFrameHeader(buf, payload []byte) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(payload)))
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(payload, castagnoli()))
}

// errBadFrame: the frame at the offset is incomplete or fails its checksum.
var errBadFrame = errors.New("incomplete or damaged entry")

// nextFrame reads the frame at data[off:]: its payload and the offset of
// the next frame.
func nextFrame(data []byte, off int) (payload []byte, next int, err error) {
	if len(data)-off < frameHeader {
		return nil, off, errBadFrame
	}
	n := binary.BigEndian.Uint32(data[off:])
	sum := binary.BigEndian.Uint32(data[off+4:])
	if n == 0 || n > maxFrame || uint64(len(data)-off-frameHeader) < uint64(n) {
		return nil, off, errBadFrame
	}
	payload = data[off+frameHeader : off+frameHeader+int(n)]
	if crc32.Checksum(payload, castagnoli()) != sum {
		return nil, off, errBadFrame
	}
	return payload, off + frameHeader + int(n), nil
}

// tornTail reports whether a bad frame at off can be what a crash during an
// append leaves: the last frame, cut short or with its data not yet on disk
// (zeros). A bad frame followed by more than its own length is damage.
func tornTail(data []byte, off int) bool {
	rest := data[off:]
	if len(rest) < frameHeader {
		return true
	}
	if n := binary.BigEndian.Uint32(rest); uint64(len(rest)) <= frameHeader+uint64(n) {
		return true
	}
	return len(bytes.Trim(rest, "\x00")) == 0
}
