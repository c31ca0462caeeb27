package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// benchInputs reads the schema and instance that SPEC §10 names.
func benchInputs(b *testing.B) (*schema, []byte) {
	b.Helper()
	schemaData, err := os.ReadFile(filepath.Join(sharedDir, "bench", "schema.json"))
	if err != nil {
		b.Fatal(err)
	}
	instance, err := os.ReadFile(filepath.Join(sharedDir, "bench", "instance.json"))
	if err != nil {
		b.Fatal(err)
	}
	v, err := decode(schemaData, schemaLimits)
	if err != nil {
		b.Fatal(err)
	}
	s, err := compileSchema(v, "inputSchema")
	if err != nil {
		b.Fatal(err)
	}
	return s, instance
}

// BenchmarkValidateArguments is bytes in, verdict out, for the SPEC §10 pair.
func BenchmarkValidateArguments(b *testing.B) {
	s, instance := benchInputs(b)
	b.SetBytes(int64(len(instance)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.validateBytes(instance, instanceLimits, "arguments"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodingJSONValid is the baseline: syntax only, no validation.
func BenchmarkEncodingJSONValid(b *testing.B) {
	_, instance := benchInputs(b)
	b.SetBytes(int64(len(instance)))
	b.ReportAllocs()
	for b.Loop() {
		if !json.Valid(instance) {
			b.Fatal("invalid")
		}
	}
}
