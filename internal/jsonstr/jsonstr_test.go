package jsonstr

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestAppendAsMarshal(t *testing.T) {
	for _, s := range []string{"", "plain", "0123abcdef", `q"uote`, `back\slash`, "<a>&b", "\x00\x1f", "caf\u00e9", "\xff\xfe", "line\u2028sep\u2029", "tab\there"} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := Append([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Errorf("Append(%q) = %s, want x%s", s, got, want)
		}
	}
}

func FuzzAppendAsMarshal(f *testing.F) {
	f.Add("plain")
	f.Add("<\xff\u2028")
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := Append(nil, s); !bytes.Equal(got, want) {
			t.Errorf("Append(%q) = %s, want %s", s, got, want)
		}
	})
}
