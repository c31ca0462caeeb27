package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func mustCompile(t testing.TB, src string) *schema {
	t.Helper()
	v, err := decode([]byte(src), schemaLimits)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	s, err := compileSchema(v, "schema")
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return s
}

// TestSchemaVectors covers the integer, decimal and uniqueness rules of SPEC §5.
func TestSchemaVectors(t *testing.T) {
	cases := []struct {
		schema, instance string
		problem          string // "" when valid
	}{
		{`{"type":"integer","maximum":9223372036854775807}`, `9223372036854775807`, ""},
		{`{"type":"integer","maximum":9223372036854775807}`, `9223372036854775808`, "9223372036854775808 is greater than maximum 9223372036854775807"},
		{`{"type":"integer"}`, `123456789012345678901234567890`, ""},
		{`{"type":"integer"}`, `9007199254740991.0`, ""},
		{`{"type":"integer"}`, `-9007199254740991.0`, ""},
		{`{"type":"integer"}`, `9007199254740992.0`, "expected integer, got number"},
		{`{"type":"integer"}`, `9.007199254740992e15`, "expected integer, got number"},
		{`{"type":"integer"}`, `1e2`, ""},
		{`{"type":"integer"}`, `true`, "expected integer, got boolean"},
		{`{"type":"integer"}`, `"7"`, "expected integer, got string"},
		{`{"type":"integer"}`, `7.5`, "expected integer, got number"},
		{`{"type":"number"}`, `false`, "expected number, got boolean"},
		{`{"type":"array","items":{"type":"integer"},"uniqueItems":true}`, `[7, 7.0]`, "equals an earlier item"},
		{`{"type":"array","items":{"type":"integer"},"uniqueItems":true}`, `[7, 70e-1]`, "equals an earlier item"},
		{`{"type":"array","items":{"type":"number"},"uniqueItems":true}`, `[0.5, 5e-1]`, "equals an earlier item"},
		{`{"type":"array","items":{"type":"number"},"uniqueItems":true}`, `[0, -0]`, "equals an earlier item"},
		{`{"type":"array","items":{"type":"number"},"uniqueItems":true}`, `[1, 1.5, 2]`, ""},
		{`{"type":"array","items":{"type":"string"},"uniqueItems":true}`, `["a", "\u0061"]`, "[1]: equals an earlier item"},
		{`{"type":"array","items":{"type":"integer"},"uniqueItems":true}`, `[` + seq(40) + `]`, ""},
		{`{"type":"array","items":{"type":"integer"},"uniqueItems":true}`, `[` + seq(40) + `,39]`, "[40]: equals an earlier item"},
		{`{"multipleOf":0.1}`, `0.3`, ""},
		{`{"multipleOf":0.1}`, `0.35`, "0.35 is not a multiple of 0.1"},
		{`{"multipleOf":0.01}`, `19.99`, ""},
		{`{"multipleOf":1e-300}`, `1e300`, ""},
		{`{"multipleOf":3}`, `1e20`, "not a multiple of 3"},
		{`{"multipleOf":7}`, `700000000000000000000000000000`, ""},
		{`{"minimum":0.1}`, `0.1`, ""},
		{`{"minimum":0.1}`, `0.09999999999999999999999`, "less than minimum 0.1"},
		{`{"exclusiveMaximum":1e2}`, `99.99999999999999999999`, ""},
		{`{"exclusiveMaximum":1e2}`, `100.0`, "not less than exclusiveMaximum 1e2"},
		{`{"exclusiveMinimum":-5}`, `-5`, "not greater than exclusiveMinimum -5"},
		{`{"maximum":-1}`, `-0.5`, "greater than maximum -1"},
		{`{"enum":[1, "a", null]}`, `1.0`, ""},
		{`{"enum":[1, "a", null]}`, `"b"`, "not one of the schema's enum values"},
		{`{"const":{"a":[1,2]}}`, `{"a":[1.0,2e0]}`, ""},
		{`{"const":{"a":[1,2]}}`, `{"a":[2,1]}`, "does not equal the schema's const"},
		{`{"type":"string","minLength":2,"maxLength":3}`, `"é"`, "is 1 characters, fewer than minLength 2"},
		{`{"type":"string","maxLength":3}`, `"\u00e9\u00e9\u00e9"`, ""},
		{`{"type":"string","maxLength":2}`, `"\u00e9\u00e9\u00e9"`, "is 3 characters, more than maxLength 2"},
		{`{"type":"string","maxLength":1}`, `"\ud83d\ude00"`, ""},
		{`{"type":"string","format":"date-time"}`, `"1990-12-31T23:59:60Z"`, ""},
		{`{"type":"string","format":"date-time"}`, `"2026-08-12T12:34:60Z"`, "not an RFC 3339 date-time"},
		{`{"propertyNames":{"maxLength":3}}`, `{"abcd":1}`, `schema.abcd: property name is 4 characters`},
		{`{"properties":{"a":{"properties":{"b":{"type":"string"}}}}}`, `{"a":{"b":5}}`, "schema.a.b: expected string, got number"},
		{`{"items":{"type":"string"}}`, `["x", ["y"]]`, "schema[1]: expected string, got array"},
		{`{"additionalProperties":false,"properties":{"a":true}}`, `{"a":1,"b":2}`, "schema.b: property is not allowed"},
		{`{"required":["a"],"properties":{}}`, `{}`, `missing required property "a"`},
		{`{"required":["a"]}`, `{"a":null}`, ""},
		{`{"minProperties":1}`, `{}`, "fewer than minProperties 1"},
		{`{"maxItems":1}`, `[1,2]`, "more than maxItems 1"},
		{`false`, `1`, "no value is allowed here"},
		{`true`, `{"a":{"a":{"a":[]}}}`, ""},
		{`{"type":"object"}`, `{"a":1,"a":2}`, `duplicate key "a"`},
		{`{"type":"object","properties":{"a":true}}`, `{"a":1,"\u0061":2}`, `duplicate key "a"`},
		{`true`, `[1,]`, "invalid JSON at line 1, column 4"},
		{`true`, `1 2`, "unexpected data after the top-level value"},
		{`true`, `NaN`, "invalid value"},
		{`true`, `1e400`, "outside the double range"},
		{`true`, `1e-400`, "underflows the double range"},
		{`true`, `0e-400`, ""},
		{`true`, `"\ud800"`, "lone surrogate escape"},
		{`true`, "\"\xff\"", "invalid UTF-8"},
		{`true`, "\xEF\xBB\xBF{}", "byte order mark"},
		{`true`, `1` + strings.Repeat("0", 1000), "longer than 1000 characters"},
		{`true`, strings.Repeat("[", 33) + strings.Repeat("]", 33), "nesting deeper than 32"},
		{`true`, strings.Repeat("[", 32) + strings.Repeat("]", 32), ""},
		{`true`, `[` + seq(9999) + `]`, ""},
		{`true`, `[` + seq(10000) + `]`, "more than 10000 values"},
	}
	for _, c := range cases {
		s := mustCompile(t, c.schema)
		err := s.validateBytes([]byte(c.instance), instanceLimits, "schema")
		clip := c.instance
		if len(clip) > 60 {
			clip = clip[:60] + "…"
		}
		switch {
		case c.problem == "" && err != nil:
			t.Errorf("%s against %s: %v", clip, c.schema, err)
		case c.problem != "" && (err == nil || !strings.Contains(err.Error(), c.problem)):
			t.Errorf("%s against %s: got %v, want %q", clip, c.schema, err, c.problem)
		}
	}
}

// seq renders the integers 0..n-1 as the body of a JSON array.
func seq(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}

func TestCompileRejections(t *testing.T) {
	cases := []struct{ schema, problem string }{
		{`{"$ref":"#"}`, `schema.$ref: keyword "$ref" is not in the bridge-v1 schema subset`},
		{`{"properties":{"a":{"pattern":"x"}}}`, `schema.properties.a.pattern: keyword "pattern"`},
		{`{"items":{"format":"email"}}`, `schema.items.format: format "email" is not supported`},
		{`{"type":"array","uniqueItems":true,"items":{"type":["string","null"]}}`, "schema.uniqueItems: uniqueItems needs"},
		{`{"type":"array","uniqueItems":true,"items":{"enum":[1]}}`, "schema.uniqueItems: uniqueItems needs"},
		{`{"minLength":-1}`, "schema.minLength: must be a non-negative integer"},
		{`{"minLength":2.0}`, ""},
		{`{"maxItems":1e2}`, ""},
		{`{"maxItems":"1"}`, "schema.maxItems: must be a non-negative integer"},
		{`{"multipleOf":-1}`, "multipleOf must be greater than 0"},
		{`{"minimum":"1"}`, "schema.minimum: must be a number"},
		{`{"type":[]}`, "type must not be an empty array"},
		{`{"required":["a",1]}`, "schema.required[1]: required entries must be strings"},
		{`{"enum":{}}`, "enum must be an array"},
		{`{"uniqueItems":"yes"}`, "uniqueItems must be a boolean"},
		{`{"title":1}`, "title must be a string"},
		{`{"examples":1}`, "examples must be an array"},
		{`{"properties":[]}`, "properties must be an object"},
		{`{"additionalProperties":1}`, "schema.additionalProperties: a schema must be an object or a boolean"},
		{`{"properties":{"we.ird":{"$id":"x"}}}`, `schema.properties["we.ird"].$id`},
	}
	for _, c := range cases {
		v, err := decode([]byte(c.schema), schemaLimits)
		if err != nil {
			t.Fatal(err)
		}
		_, err = compileSchema(v, "schema")
		switch {
		case c.problem == "" && err != nil:
			t.Errorf("%s: %v", c.schema, err)
		case c.problem != "" && (err == nil || !strings.Contains(err.Error(), c.problem)):
			t.Errorf("%s: got %v, want %q", c.schema, err, c.problem)
		}
	}
}

func TestDateTimeVectors(t *testing.T) {
	valid := []string{"1990-12-31T23:59:60Z", "1990-12-31T18:59:60-05:00", "1991-01-01T00:59:60+01:00",
		"2024-02-29T00:00:00Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2026-04-30T23:59:60z",
		"2026-01-01T00:00:00-00:00", "2026-01-01t00:00:00.1+23:59"}
	invalid := []string{"2026-08-12T12:34:60Z", "1990-12-31T23:59:60+01:00", "9999-12-31T23:59:59-23:59",
		"0001-01-01T00:00:00+23:59", "9999-12-31T23:59:60Z", "2023-02-29T00:00:00Z", "2026-01-01T00:00:00",
		"2026-01-01T00:00:00.Z", "2026-01-01 00:00:00Z", "0000-01-01T00:00:00Z", "2026-01-01T24:00:00Z",
		"2026-01-01T00:00:00+24:00", "2026-01-01T00:00:00+01:60", "2026-1-01T00:00:00Z", "２026-01-01T00:00:00Z"}
	for _, s := range valid {
		if err := checkDateTime([]byte(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range invalid {
		if checkDateTime([]byte(s)) == nil {
			t.Errorf("%s: accepted", s)
		}
	}
}

func TestDecodeKeepsNumbersAndOrder(t *testing.T) {
	in := `{"z":1,"a":[12345678901234567890123,1.50,-0,1E+2],"s":"\u00e9\n\"","n":null,"t":true}`
	v, err := decode([]byte(in), instanceLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(encode(v)), `{"z":1,"a":[12345678901234567890123,1.50,-0,1E+2],"s":"é\n\"","n":null,"t":true}`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// Fuzz targets: run briefly in .ci/run; see the README for longer runs.

func addCorpus(f *testing.F, pattern string) {
	files, _ := filepath.Glob(filepath.Join(conformanceDir, pattern))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil && len(data) < 4096 {
			f.Add(data)
		}
	}
}

func FuzzDecode(f *testing.F) {
	addCorpus(f, "json-test-suite/*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decode(data, instanceLimits)
		verr := (*schema)(nil).validateBytes(data, instanceLimits, "doc")
		if (err == nil) != (verr == nil) {
			t.Fatalf("decoder %v, validator %v", err, verr)
		}
		if err != nil {
			return
		}
		again, err := decode(encode(v), instanceLimits)
		if err != nil || !equal(v, again) || string(encode(again)) != string(encode(v)) {
			t.Fatalf("re-encoding changed the document: %v", err)
		}
	})
}

func FuzzDateTime(f *testing.F) {
	data, _ := os.ReadFile(filepath.Join(conformanceDir, "rfc3339-vectors.json"))
	if doc, err := decode(data, suiteLimits); err == nil {
		for _, vec := range doc.arr {
			in, _ := vec.get("input")
			f.Add(in.s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		first := checkDateTime([]byte(s))
		if (checkDateTime([]byte(s)) == nil) != (first == nil) {
			t.Fatal("not deterministic")
		}
	})
}

func FuzzCompileSchema(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"integer","multipleOf":0.5}}}`), []byte(`{"a":1.5}`))
	f.Add([]byte(`{"type":"array","items":{"type":"number"},"uniqueItems":true}`), []byte(`[1,1.0]`))
	files, _ := filepath.Glob(filepath.Join(conformanceDir, "json-schema-test-suite", "*.json"))
	for _, file := range files {
		data, _ := os.ReadFile(file)
		doc, err := decode(data, suiteLimits)
		if err != nil {
			continue
		}
		for _, g := range doc.arr {
			s, _ := g.get("schema")
			tests, _ := g.get("tests")
			for _, c := range tests.arr {
				d, _ := c.get("data")
				f.Add(encode(s), encode(d))
			}
		}
	}
	f.Fuzz(func(t *testing.T, schemaData, instance []byte) {
		v, err := decode(schemaData, schemaLimits)
		if err != nil {
			return
		}
		s, err := compileSchema(v, "schema")
		if err != nil {
			if _, ok := err.(*problem); !ok {
				t.Fatalf("compile error of type %T", err)
			}
			return
		}
		first := s.validateBytes(instance, instanceLimits, "data")
		again := s.validateBytes(instance, instanceLimits, "data")
		if (first == nil) != (again == nil) || first != nil && first.Error() != again.Error() {
			t.Fatalf("not deterministic: %v, then %v", first, again)
		}
	})
}
