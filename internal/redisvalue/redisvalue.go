// Package redisvalue reads the head of a Redis string value, never the
// whole of it: a lock's value is anyone's input, and one of 100 MB read with
// GET would cost jobwatch that much memory for a holder it shows in at most
// a few hundred bytes. The locks source's Redis probe and jobwatch run's
// Redis lock both read a holder this way.
package redisvalue

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Max is how much of a value is read for a holder: more than either
// reader shows (a holder label of 64 characters, a record's holder of 255
// bytes), and enough for a host:pid:run token whose host is a full host
// name.
const Max = 256

// Value is the head of a string value and its whole length.
type Value struct {
	Head string // the first n bytes at most (Queue's, Read's n)
	Len  int64  // the value's length in bytes; 0 for a missing key
}

// Cut reports whether Head is less than the whole value.
func (v Value) Cut() bool { return int64(len(v.Head)) < v.Len }

// Reply is a queued read, answered once its pipeline has run.
type Reply struct {
	head *redis.StringCmd
	len  *redis.IntCmd
}

// Queue queues GETRANGE key 0 n-1 and STRLEN key on p, for a caller that
// sends other commands in the same round trip. n is Max, or more for a
// caller that compares the value with a longer token of its own.
func Queue(ctx context.Context, p redis.Pipeliner, key string, n int) Reply {
	return Reply{head: p.GetRange(ctx, key, 0, int64(max(n, 1))-1), len: p.StrLen(ctx, key)}
}

// Result is the value read, once the pipeline has run. A key that holds
// no string (a hash, say) is the server's WRONGTYPE error.
func (r Reply) Result() (Value, error) {
	head, err := r.head.Result()
	if err != nil {
		return Value{}, fmt.Errorf("GETRANGE: %w", err)
	}
	n, err := r.len.Result()
	if err != nil {
		return Value{}, fmt.Errorf("STRLEN: %w", err)
	}
	return Value{Head: head, Len: max(n, int64(len(head)))}, nil
}

// Read reads the first n bytes of key's value and its length in one round
// trip. A missing key reads as an
// empty value: a caller that must tell them apart asks PTTL or EXISTS in
// the same pipeline (Queue).
func Read(ctx context.Context, c redis.Cmdable, key string, n int) (Value, error) {
	p := c.Pipeline()
	r := Queue(ctx, p, key, n)
	_, _ = p.Exec(ctx) // each command's own error is read by Result
	return r.Result()
}

// IsWrongType reports whether err is the server's answer that a key holds
// no string.
func IsWrongType(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "WRONGTYPE")
}
