package redistest

import (
	"context"
	"testing"
)

// A restart loses every key (no persistence) and keeps the port.
func TestRestart(t *testing.T) {
	s := Start(t, "s3cret")
	c := s.Client(t)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if err := c.Get(ctx, "k").Err(); err == nil {
		t.Fatal("server answers after Stop")
	}
	s.Restart()
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("after restart: exists %d, %v; want 0, nil", n, err)
	}
}
