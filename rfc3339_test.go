package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
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

// dateTimeSyntax is the grammar of SPEC §7: YYYY-MM-DDTHH:MM:SS, an
// optional fraction of at least one digit, then Z or ±HH:MM; ASCII digits
// only, T/t and Z/z in either case.
var dateTimeSyntax = regexp.MustCompile(`^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?([Zz]|([+-])([0-9]{2}):([0-9]{2}))$`)

// dateTimeModel is SPEC §7 written apart from checkDateTime, as the oracle
// of the fuzz target: the grammar as a regular expression, real calendar
// days from time.Parse, and the ranges and leap-second rule as the SPEC
// states them.
func dateTimeModel(s string) bool {
	m := dateTimeSyntax.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	year, hour, minute, second := n(1), n(4), n(5), n(6)
	if year < 1 || hour > 23 || minute > 59 || second > 60 {
		return false // years 0001–9999, hours 00–23, minutes 00–59, seconds 00–60
	}
	if _, err := time.Parse("2006-01-02", m[1]+"-"+m[2]+"-"+m[3]); err != nil {
		return false // a real calendar day
	}
	offset := 0 // seconds east of UTC
	if m[9] != "" {
		if n(10) > 23 || n(11) > 59 {
			return false
		}
		offset = n(10)*3600 + n(11)*60
		if m[9] == "-" {
			offset = -offset
		}
	}
	// The UTC instant, a leap second taken as the second before it.
	local := time.Date(year, time.Month(n(2)), n(3), hour, minute, min(second, 59), 0, time.UTC)
	utc := local.Add(-time.Duration(offset) * time.Second)
	if utc.Year() < 1 || utc.Year() > 9999 {
		return false // normalization to UTC stays inside years 0001–9999
	}
	if second == 60 {
		// Only 23:59:60 UTC on the last day of a month: the instant after
		// it is the first of a month at midnight, inside the calendar too.
		after := utc.Add(time.Second)
		if after.Day() != 1 || after.Hour() != 0 || after.Minute() != 0 || after.Second() != 0 || after.Year() > 9999 {
			return false
		}
	}
	return true
}

// TestDateTimeAgainstModel checks the model against the SPEC's own
// examples and the corpus, then checkDateTime against the model over a
// grid of edges: years, months, days, times, leap seconds and offsets.
func TestDateTimeAgainstModel(t *testing.T) {
	t.Parallel()
	spec := map[string]bool{
		"1990-12-31T23:59:60Z": true, "1990-12-31T18:59:60-05:00": true, "1991-01-01T00:59:60+01:00": true,
		"2026-08-12T12:34:60Z": false, "1990-12-31T23:59:60+01:00": false, "9999-12-31T23:59:59-23:59": false,
		"0001-01-01T00:00:00+23:59": false, "9999-12-31T23:59:60Z": false,
	}
	for s, want := range spec {
		if dateTimeModel(s) != want {
			t.Fatalf("the model says %s is valid=%v; SPEC §7 says %v", s, !want, want)
		}
	}
	data, err := os.ReadFile(filepath.Join(conformanceDir, "rfc3339", "rfc3339-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct {
		Input string `json:"input"`
		Valid bool   `json:"valid"`
	}
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	for _, v := range vectors {
		if dateTimeModel(v.Input) != v.Valid {
			t.Fatalf("the model says %q is valid=%v; the corpus says %v", v.Input, !v.Valid, v.Valid)
		}
	}
	var valid, invalid int
	for _, year := range []string{"0000", "0001", "1990", "2000", "2023", "2024", "2100", "9998", "9999"} {
		for _, month := range []string{"00", "01", "02", "04", "06", "11", "12", "13"} {
			for _, day := range []string{"00", "01", "28", "29", "30", "31", "32"} {
				for _, clock := range []string{"T00:00:00", "t00:00:00", "T00:00:60", "T00:59:60", "T12:34:60", "T18:59:60",
					"T22:59:60", "T23:59:59", "T23:59:60", "T23:59:61", "T23:60:00", "T24:00:00", "T23:59:60.999", "T00:00:00."} {
					for _, zone := range []string{"Z", "z", "+00:00", "-00:00", "+01:00", "-05:00", "+23:59", "-23:59", "+24:00", "+01:60", ""} {
						s := year + "-" + month + "-" + day + clock + zone
						want := dateTimeModel(s)
						if got := checkDateTime([]byte(s)) == nil; got != want {
							t.Errorf("%s: checkDateTime says valid=%v, the SPEC §7 model says %v", s, got, want)
							continue
						}
						if want {
							valid++
						} else {
							invalid++
						}
					}
				}
			}
		}
	}
	t.Logf("conformance: RFC 3339 model: %d SPEC examples and %d corpus vectors agree with the model; checkDateTime agrees on %d valid and %d invalid grid strings",
		len(spec), len(vectors), valid, invalid)
	if valid < 1000 || invalid < 1000 {
		t.Fatalf("the grid has only %d valid and %d invalid strings", valid, invalid)
	}
}

// FuzzDateTime compares checkDateTime with the SPEC §7 model on any input;
// the seeds are the corpus vectors.
func FuzzDateTime(f *testing.F) {
	data, _ := os.ReadFile(filepath.Join(conformanceDir, "rfc3339", "rfc3339-vectors.json"))
	if doc, err := decode(data, suiteLimits); err == nil {
		for _, vec := range doc.arr {
			in, _ := vec.get("input")
			f.Add(in.s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := checkDateTime([]byte(s))
		if want := dateTimeModel(s); (got == nil) != want {
			t.Fatalf("%q: checkDateTime says %v; the SPEC §7 model says valid=%v", s, got, want)
		}
	})
}
