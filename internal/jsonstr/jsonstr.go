// Package jsonstr appends a string as encoding/json writes it, without
// reflection for the strings that need no escape: the hand encoders of the
// saved state and of a run log's read position write json.Marshal's bytes.
package jsonstr

import (
	"encoding/json"
	"unicode/utf8"
)

// Append appends s to b quoted as json.Marshal quotes it.
func Append(b []byte, s string) []byte {
	if !Plain(s) {
		// encoding/json's escaping (HTML characters, invalid UTF-8,
		// U+2028 and U+2029) is not strconv.Quote's.
		q, err := json.Marshal(s)
		if err != nil {
			panic(err) // a string always marshals
		}
		return append(b, q...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Plain reports whether s needs no escape, json.Marshal's HTML escapes
// included.
func Plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
