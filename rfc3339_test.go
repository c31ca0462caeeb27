package main

import (
	"os"
	"path/filepath"
	"testing"
)

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

func TestConformanceRFC3339Vectors(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(conformanceDir, "rfc3339", "rfc3339-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := decode(data, suiteLimits)
	if err != nil {
		t.Fatal(err)
	}
	var valid, invalid int
	for _, vec := range doc.arr {
		in, _ := vec.get("input")
		want, _ := vec.get("valid")
		why, _ := vec.get("why")
		err := checkDateTime([]byte(in.s))
		if (err == nil) != want.b {
			t.Errorf("%q (%s): want valid=%v, got %v", in.s, why.s, want.b, err)
			continue
		}
		if want.b {
			valid++
		} else {
			invalid++
		}
	}
	t.Logf("conformance: RFC 3339 vectors: %d valid and %d invalid as expected", valid, invalid)
	if valid+invalid < 100 {
		t.Fatalf("only %d vectors", valid+invalid)
	}

	data, err = os.ReadFile(filepath.Join(conformanceDir, "rfc3339", "leap-seconds-iers.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err = decode(data, suiteLimits)
	if err != nil {
		t.Fatal(err)
	}
	list, _ := doc.get("leap_seconds_utc")
	for _, ls := range list.arr {
		if err := checkDateTime([]byte(ls.s)); err != nil {
			t.Errorf("historical leap second %s: %v", ls.s, err)
		}
	}
	t.Logf("conformance: %d historical leap seconds valid", len(list.arr))
}

func FuzzDateTime(f *testing.F) {
	data, _ := os.ReadFile(filepath.Join(conformanceDir, "rfc3339", "rfc3339-vectors.json"))
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
