// Package jsoncombine carries a pipeline's partial summaries as JSON
// strings, so that Beam's global combiners (which the Go SDK registers as
// plain functions of strings) can merge them without a coder of their own.
// The bfs and swarm pipelines each merge their own summary type with it.
package jsoncombine

import (
	"encoding/json"
	"fmt"
)

// Encode returns v as JSON. v is plain data, so encoding cannot fail.
func Encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("jsoncombine: encoding %T: %v", v, err))
	}
	return string(b)
}

// Decode parses str as a T; what names it in the error.
func Decode[T any](str, what string) (*T, error) {
	var v T
	if err := json.Unmarshal([]byte(str), &v); err != nil {
		return nil, fmt.Errorf("a malformed %s: %w", what, err)
	}
	return &v, nil
}

// Merge decodes a and b, lets merge fold b into a, and encodes the result.
func Merge[T any](a, b, what string, merge func(a, b *T)) (string, error) {
	va, err := Decode[T](a, what)
	if err != nil {
		return "", err
	}
	vb, err := Decode[T](b, what)
	if err != nil {
		return "", err
	}
	merge(va, vb)
	return Encode(va), nil
}
