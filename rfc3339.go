package main

import (
	"errors"
	"time"
)

// checkDateTime applies the RFC 3339 date-time rule of SPEC §7:
// YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM), real calendar days, years
// 0001–9999 before and after normalization to UTC, and a second of 60 only
// at 23:59:60 UTC on the last day of a month.
func checkDateTime(b []byte) error {
	if len(b) < 20 {
		return errors.New("too short")
	}
	digits := func(i, n int) (int, bool) {
		v := 0
		for _, c := range b[i : i+n] {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	year, ok1 := digits(0, 4)
	month, ok2 := digits(5, 2)
	day, ok3 := digits(8, 2)
	hour, ok4 := digits(11, 2)
	minute, ok5 := digits(14, 2)
	second, ok6 := digits(17, 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || b[4] != '-' || b[7] != '-' || b[13] != ':' || b[16] != ':' ||
		(b[10] != 'T' && b[10] != 't') {
		return errors.New("not of the form YYYY-MM-DDTHH:MM:SS")
	}
	i := 19
	if b[i] == '.' {
		i++
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == 20 {
			return errors.New("a fraction needs at least one digit")
		}
	}
	offset := 0 // minutes east of UTC
	switch rest := b[i:]; {
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits(i+1, 2)
		om, ok2 := digits(i+4, 2)
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return errors.New("offset out of range")
		}
		offset = oh*60 + om
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return errors.New("needs Z or a ±HH:MM offset")
	}
	switch {
	case year < 1 || month < 1 || month > 12:
		return errors.New("year or month out of range")
	case day < 1 || day > daysIn(year, time.Month(month)):
		return errors.New("no such day")
	case hour > 23 || minute > 59 || second > 60:
		return errors.New("time of day out of range")
	}
	sec := min(second, 59)
	utc := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC).Add(-time.Duration(offset) * time.Minute)
	if utc.Year() < 1 || utc.Year() > 9999 {
		return errors.New("outside years 0001-9999 in UTC")
	}
	if second == 60 {
		next := utc.Add(time.Second)
		if utc.Hour() != 23 || utc.Minute() != 59 || next.Day() != 1 {
			return errors.New("a leap second must be 23:59:60 UTC on the last day of a month")
		}
		if next.Year() > 9999 {
			return errors.New("the instant after this leap second is past year 9999")
		}
	}
	return nil
}

func daysIn(year int, month time.Month) int {
	return time.Date(year, month+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
