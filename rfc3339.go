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
	num := func(i, n int) int { // the n ASCII digits at i, or -1
		v := 0
		for _, c := range b[i : i+n] {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	if len(b) < 20 {
		return errors.New("too short")
	}
	year, month, day, hour, minute, second := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2)
	if min(year, month, day, hour, minute, second) < 0 || b[4] != '-' || b[7] != '-' || b[10]|0x20 != 't' || b[13] != ':' || b[16] != ':' {
		return errors.New("not of the form YYYY-MM-DDTHH:MM:SS")
	}
	i := 19
	if b[i] == '.' {
		for i++; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		}
		if i == 20 {
			return errors.New("a fraction needs at least one digit")
		}
	}
	offset := 0 // minutes east of UTC
	switch rest := b[i:]; {
	case len(rest) == 1 && rest[0]|0x20 == 'z':
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		hours, minutes := num(i+1, 2), num(i+4, 2)
		if min(hours, minutes) < 0 || hours > 23 || minutes > 59 {
			return errors.New("offset out of range")
		}
		offset = hours*60 + minutes
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return errors.New("needs Z or a ±HH:MM offset")
	}
	switch {
	case year < 1 || month < 1 || month > 12:
		return errors.New("year or month out of range")
	case day < 1 || day > time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day():
		return errors.New("no such day")
	case hour > 23 || minute > 59 || second > 60:
		return errors.New("time of day out of range")
	}
	// time.Date normalizes the minutes past the hour; a leap second is
	// taken as the second before it.
	utc := time.Date(year, time.Month(month), day, hour, minute-offset, min(second, 59), 0, time.UTC)
	switch next := utc.Add(time.Second); {
	case utc.Year() < 1 || utc.Year() > 9999:
		return errors.New("outside years 0001-9999 in UTC")
	case second < 60:
	case utc.Hour() != 23 || utc.Minute() != 59 || next.Day() != 1:
		return errors.New("a leap second must be 23:59:60 UTC on the last day of a month")
	case next.Year() > 9999:
		return errors.New("the instant after this leap second is past year 9999")
	}
	return nil
}
