package redisvalue

import (
	"context"
	"strings"
	"testing"

	"github.com/jobwatch/jobwatch/internal/testsupport/redistest"
)

func TestRead(t *testing.T) {
	srv := redistest.Start(t, "")
	c := srv.Client(t)
	ctx := context.Background()
	c.Set(ctx, "short", "web2:4242:run", 0)
	c.Set(ctx, "exact", strings.Repeat("x", Max), 0)
	srv.SetLarge(t, "large", "web2:", 1<<20)
	c.HSet(ctx, "hash", "owner", "a")
	for _, tc := range []struct {
		key, head string
		len       int64
		cut       bool
	}{
		{key: "missing"},
		{key: "short", head: "web2:4242:run", len: 13},
		{key: "exact", head: strings.Repeat("x", Max), len: Max},
		{key: "large", head: "web2:" + strings.Repeat("\x00", Max-5), len: 1 << 20, cut: true},
	} {
		t.Run(tc.key, func(t *testing.T) {
			v, err := Read(ctx, c, tc.key, Max)
			if err != nil {
				t.Fatal(err)
			}
			if v.Head != tc.head || v.Len != tc.len || v.Cut() != tc.cut {
				t.Errorf("Read = %q (%d bytes), len %d, cut %v; want %q, len %d, cut %v", v.Head[:min(len(v.Head), 20)], len(v.Head), v.Len, v.Cut(), tc.head[:min(len(tc.head), 20)], tc.len, tc.cut)
			}
		})
	}
	if v, err := Read(ctx, c, "large", 10); err != nil || v.Head != "web2:\x00\x00\x00\x00\x00" {
		t.Errorf("Read of 10 bytes = %q, %v", v.Head, err)
	}
	if _, err := Read(ctx, c, "hash", Max); !IsWrongType(err) || !strings.Contains(err.Error(), "GETRANGE") {
		t.Errorf("a hash reads as %v, want GETRANGE's WRONGTYPE", err)
	}
}
