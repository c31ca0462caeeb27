package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// schema.go is the JSON of the bridge: the one strict, bounded decoder of
// every document it reads (SPEC §6), and the JSON Schema subset that a
// manifest's schemas are compiled into and arguments and answers are
// validated against (SPEC §5).
//
// One pass: a scanner reads the bytes once, checking the strict rules and
// the document's bounds (bytes, depth, values) as it goes and, given a
// compiled schema, validating the value as it reads it, so that arguments
// and answers are checked straight from their bytes, without a tree. Where
// a tree is needed (a manifest, a plugin root, a call's own arguments),
// decode runs the same strict pass first, recording the size of each
// container, and only then builds the tree, from two arrays of the exact
// size; nothing is built from a document that breaks a rule.
//
// Reading order, in sections: documents and values; exact numbers;
// problems and their locations; the compiled schema; the scanner, the
// strict pass; validation on top of it; trees, decoded and encoded;
// compiling a schema; text helpers.

// ---- documents and values (SPEC §3, §5, §6) ----

// limits bound one JSON document while it is decoded (SPEC §3, §5, §6).
type limits struct {
	bytes  int // document size in bytes
	depth  int // nesting of arrays and objects
	values int // values of any kind, containers included
}

var (
	rootLimits     = limits{bytes: 1 << 20, depth: 24, values: 12000} // plugin list and plugin roots
	manifestLimits = limits{bytes: 256 << 10, depth: 24, values: 12000}
	schemaLimits   = limits{bytes: 64 << 10, depth: 16, values: 2048}
	instanceLimits = limits{bytes: 256 << 10, depth: 32, values: 10000} // arguments and target bodies
	// NetBox's OpenAPI document (SPEC §17), about 20 MB with a few plugins,
	// is checked whole but never decoded whole: see members. A path item or
	// a component schema is decoded alone, within openapiPartLimits (NetBox
	// 4.7's largest has 3,814 values).
	openapiLimits     = limits{bytes: 64 << 20, depth: 64, values: 8 << 20}
	openapiPartLimits = limits{bytes: 64 << 20, depth: 64, values: 1 << 16}
)

// numberTokenLimit bounds the text of one number token so that exact
// decimal arithmetic on it stays cheap (SPEC §5).
const numberTokenLimit = 1000

// maxSafeInteger is the largest integral float token that counts as an integer.
var maxSafeInteger = big.NewInt(1<<53 - 1)

// kind is the JSON type of a decoded value.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// value is a decoded JSON value. Objects keep their member order and numbers
// keep their exact token text, so re-encoding a value changes no number.
type value struct {
	kind   kind
	b      bool
	offset int32  // of the value's first byte in the document decoded
	s      string // string content, or the number token
	arr    []value
	obj    []member
}

type member struct {
	key string
	val value
}

// get returns the member named key of an object value.
func (v value) get(key string) (value, bool) {
	if i := slices.IndexFunc(v.obj, func(m member) bool { return m.key == key }); i >= 0 {
		return v.obj[i].val, true
	}
	return value{}, false
}

// ---- exact numbers (SPEC §5) ----

// exact is the exact value of a checked number token. Tokens are short and
// within the double range, so the arithmetic on them stays cheap (SPEC §5).
func exact(tok string) *big.Rat {
	if r, ok := new(big.Rat).SetString(tok); ok {
		return r
	}
	return new(big.Rat) // SetString refuses exponents past 1e6: only zeros get that far
}

// isInteger applies the SPEC §5 integer rule to a number token: integer
// tokens always, other tokens when integral and within ±9007199254740991.
func isInteger(tok string, plain bool) bool {
	if plain {
		return true
	}
	r := exact(tok)
	return r.IsInt() && r.Num().CmpAbs(maxSafeInteger) <= 0
}

// equal is JSON equality: numbers by exact value, objects regardless of order.
func equal(a, b value) bool {
	switch {
	case a.kind != b.kind:
		return false
	case a.kind == kindNull || a.kind == kindBool: // a null's b is false
		return a.b == b.b
	case a.kind == kindNumber || a.kind == kindString:
		return a.s == b.s || a.kind == kindNumber && exact(a.s).Cmp(exact(b.s)) == 0
	case a.kind == kindArray:
		return slices.EqualFunc(a.arr, b.arr, equal)
	}
	return len(a.obj) == len(b.obj) && !slices.ContainsFunc(a.obj, func(m member) bool {
		o, ok := b.get(m.key)
		return !ok || !equal(m.val, o)
	})
}

// ---- problems and locations ----

// problem is one rule broken at a JSON location. It is the error of the
// strict decoder, the manifest rules, the schema compiler and the validator.
type problem struct {
	Location string `json:"location"`
	Message  string `json:"message"`
	Line     int    `json:"line,omitempty"` // of Location in the document, when known
	Column   int    `json:"column,omitempty"`
	Tool     string `json:"tool,omitempty"` // the name of the manifest's tool at Location
	offset   int    // of Location in the document, for the file's order
}

func (p *problem) Error() string {
	if p.Location == "" {
		return p.Message
	}
	return p.Location + ": " + p.Message
}

// problems lists the rules one document breaks, every one of them: a
// checker tells whether a part of the document broke a rule by the growth
// of the list, so nothing may be dropped. Their number is bounded by the
// document's values, each of which breaks at most a few rules; printers
// show capped().
type problems []problem

// problemLimit is how many problems a printer shows.
const problemLimit = 100

func (ps *problems) add(loc, format string, args ...any) {
	ps.put(problem{Location: loc, Message: fmt.Sprintf(format, args...)})
}

func (ps *problems) put(p problem) { *ps = append(*ps, p) }

// addErr adds a decoder or validator error: decode and validateBytes
// return no error but a *problem (the scanner, checkType, checkCount and
// checkString make nothing else), and anything else is an internal error.
func (ps *problems) addErr(err error) { ps.put(*err.(*problem)) }

// capped is what a printer shows: the first problemLimit problems, then a
// line that counts the others.
func (ps problems) capped() problems {
	if len(ps) <= problemLimit {
		return ps
	}
	return append(ps[:problemLimit:problemLimit], problem{Message: fmt.Sprintf("and %d more problems: fix these and check again", len(ps)-problemLimit)})
}

// plainKey are the bytes of a key that a location renders after a dot.
const plainKey = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$-"

// child renders the location of an object member; a key of other bytes is
// quoted, and a long one clipped.
func child(loc, key string) string {
	switch {
	case key == "" || len(key) > clipLimit || strings.Trim(key, plainKey) != "":
		return loc + "[" + quote(key) + "]"
	case loc == "":
		return key
	}
	return loc + "." + key
}

func index(loc string, i int) string { return loc + "[" + strconv.Itoa(i) + "]" }

// locationSegment is the first segment of a location as child and index
// render it: .key (the dot optional first), [index], or ["key"], clipped
// when followed by an ellipsis.
var locationSegment = regexp.MustCompile(`^(?:\.?([A-Za-z0-9_$-]+)|\[([0-9]+)\]|\[("(?:[^"\\]|\\.)*")(…?)\])`)

// find returns the deepest value below v on the location loc, rendered
// from v as child and index render one.
func (v value) find(loc string) value {
	for m := locationSegment.FindStringSubmatch(loc); m != nil; m = locationSegment.FindStringSubmatch(loc) {
		loc = loc[len(m[0]):]
		if i, err := strconv.Atoi(m[2]); err == nil && i < len(v.arr) {
			v = v.arr[i]
			continue
		}
		key := m[1]
		if m[3] != "" {
			key, _ = strconv.Unquote(m[3])
		}
		i := slices.IndexFunc(v.obj, func(e member) bool { return e.key == key || m[4] != "" && strings.HasPrefix(e.key, key) })
		if m[2] != "" || i < 0 {
			return v
		}
		v = v.obj[i].val
	}
	return v
}

// here stands for the location of the value being read until the caller,
// on failure only, puts the real location in its place.
const here = "\x00"

// relocate puts loc in place of here in the location of a problem.
func relocate(err error, loc string) error {
	if p, ok := err.(*problem); ok && strings.HasPrefix(p.Location, here) {
		p.Location = loc + p.Location[len(here):]
	}
	return err
}

// ---- the compiled schema (SPEC §5) ----

// typeMask is a set of JSON Schema type names.
type typeMask uint8

const (
	typeNull typeMask = 1 << iota
	typeBoolean
	typeInteger
	typeNumber
	typeString
	typeArray
	typeObject
	scalarTypes = typeNull | typeBoolean | typeInteger | typeNumber | typeString
)

// typeNames are the seven type names, in the order of their typeMask bits.
var typeNames = [...]string{"null", "boolean", "integer", "number", "string", "array", "object"}

func (t typeMask) String() string {
	var names []string
	for i, n := range typeNames {
		if t&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, " or ")
}

// schema is a compiled schema of the bridge-v1 subset (SPEC §5). A nil
// *schema accepts anything.
type schema struct {
	never         bool     // the false schema
	types         typeMask // 0: any type
	enum          []value
	hasEnum       bool
	constant      *value
	props         []property
	propIndex     map[string]int
	required      []int // indexes into props
	additional    *schema
	propertyNames *schema
	items         *schema
	unique        bool
	dateTime      bool
	counts        [6]int      // of countKeywords, a maximum -1 when absent
	numbers       [5]*decimal // of numberRules
}

// countKeywords name schema.counts: the least and the most items,
// characters and properties.
var countKeywords = [6]string{"minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"}

// The pairs of countKeywords.
const itemCounts, lengthCounts, propertyCounts = 0, 2, 4

// numberRules are the keywords of schema.numbers: a number breaks one when
// fails holds of it and the keyword's value.
var numberRules = [5]numberRule{
	{"minimum", "less than minimum", func(n decimal, b *decimal) bool { return n.cmp(b) < 0 }},
	{"maximum", "greater than maximum", func(n decimal, b *decimal) bool { return n.cmp(b) > 0 }},
	{"exclusiveMinimum", "not greater than exclusiveMinimum", func(n decimal, b *decimal) bool { return n.cmp(b) <= 0 }},
	{"exclusiveMaximum", "not less than exclusiveMaximum", func(n decimal, b *decimal) bool { return n.cmp(b) >= 0 }},
	{"multipleOf", "not a multiple of", func(n decimal, b *decimal) bool { return !n.multipleOf(b) }},
}

type numberRule struct {
	keyword, what string
	fails         func(n decimal, b *decimal) bool
}

// property is a name the schema declares in properties or required.
type property struct {
	name     string
	schema   *schema // nil when only required: additional applies
	declared bool
}

// decimal is the value of a number token: the int64 i64 when rat is nil,
// which spares exact arithmetic for most numbers.
type decimal struct {
	i64  int64
	rat  *big.Rat
	text string // the token, of a keyword's value
}

// newDecimal is the value of a checked number token.
func newDecimal(tok []byte) decimal {
	if i, err := strconv.ParseInt(string(tok), 10, 64); err == nil {
		return decimal{i64: i}
	}
	return decimal{rat: exact(string(tok))}
}

func (d decimal) exact() *big.Rat {
	if d.rat == nil {
		return new(big.Rat).SetInt64(d.i64)
	}
	return d.rat
}

func (d decimal) cmp(b *decimal) int {
	if d.rat == nil && b.rat == nil {
		return cmp.Compare(d.i64, b.i64)
	}
	return d.exact().Cmp(b.exact())
}

// multipleOf reports whether d is a multiple of b, which is positive.
func (d decimal) multipleOf(b *decimal) bool {
	if d.rat == nil && b.rat == nil {
		return d.i64%b.i64 == 0
	}
	return new(big.Rat).Quo(d.exact(), b.exact()).IsInt()
}

var (
	falseSchema = &schema{never: true}
	anySchema   = &schema{counts: [6]int{0, -1, 0, -1, 0, -1}}
)

// propertySchema is the schema of the value of property i, or of a
// property the schema does not declare when i < 0.
func (s *schema) propertySchema(i int) *schema {
	if i >= 0 && s.props[i].declared {
		return s.props[i].schema
	}
	return s.additional
}

// ---- the scanner: strict JSON in one pass (SPEC §6) ----

// scanner is the one strict tokenizer under every document the bridge reads.
// It enforces the depth and value limits while it reads.
type scanner struct {
	data        []byte
	pos         int
	depth       int
	values      int
	memberCount int     // object members read
	sizes       []int32 // when not nil, the size of each container read, in order
	lim         limits
	err         error // the syntax error more found

	// build's state: the document as a string and the arenas its
	// containers are cut from.
	text     string
	members  []member
	elements []value
}

// scanDocument reads data as one strict JSON document within lim, in one pass and
// without building a tree, and validates it against s; root names the
// document in problem locations. With sizes (not nil) it records the size
// of every container, for build.
func scanDocument(data []byte, lim limits, s *schema, root string, sizes []int32) (scanner, error) {
	sc := scanner{data: data, lim: lim, sizes: sizes}
	var err error
	switch {
	case len(data) > lim.bytes:
		return sc, &problem{Message: fmt.Sprintf("document is larger than %d bytes", lim.bytes)}
	case bytes.HasPrefix(data, []byte("\xEF\xBB\xBF")):
		err = sc.errorf("byte order mark is not allowed")
	default:
		err = sc.validate(s, root)
	}
	if sc.skip(false); err == nil && sc.pos < len(data) {
		err = sc.errorf("unexpected data after the top-level value")
	}
	return sc, relocate(err, root)
}

// errorf reports a syntax error at the current position, located at the
// value being read (here).
func (sc *scanner) errorf(format string, args ...any) error {
	line, column := lineColumn(sc.data, sc.pos)
	return &problem{Location: here, Line: line, Column: column,
		Message: fmt.Sprintf("invalid JSON at line %d, column %d (byte %d): ", line, column, sc.pos) + fmt.Sprintf(format, args...)}
}

// errorAt reports a syntax error at offset i, which becomes the current
// position.
func (sc *scanner) errorAt(i int, format string, args ...any) error {
	sc.pos = i
	return sc.errorf(format, args...)
}

// lineColumn is the 1-based line and column (in bytes) of offset in data.
func lineColumn(data []byte, offset int) (line, column int) {
	before := data[:min(offset, len(data))]
	return bytes.Count(before, []byte("\n")) + 1, len(before) - bytes.LastIndexByte(before, '\n')
}

// space marks the bytes of JSON white space.
var space = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// skip skips white space, and with separators the commas and colons that
// build and members read past.
func (sc *scanner) skip(separators bool) {
	for ; sc.pos < len(sc.data); sc.pos++ {
		if c := sc.data[sc.pos]; !space[c] && !(separators && (c == ',' || c == ':')) {
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end of input.
func (sc *scanner) peek() byte {
	sc.skip(false)
	if sc.pos < len(sc.data) {
		return sc.data[sc.pos]
	}
	return 0
}

// open checks that s accepts the container type got, consumes '[' or '{'
// and enters one level of nesting. It reserves the container's size when
// the scanner records sizes for build, and returns where it goes (-1:
// nowhere), for more.
func (sc *scanner) open(s *schema, got typeMask, loc string) (int, error) {
	if err := s.checkType(got, loc); err != nil {
		return 0, err
	}
	if sc.depth++; sc.depth > sc.lim.depth {
		return 0, sc.errorf("nesting deeper than %d", sc.lim.depth)
	}
	sc.pos++
	if sc.sizes == nil {
		return -1, nil
	}
	sc.sizes = append(sc.sizes, 0)
	return len(sc.sizes) - 1, nil
}

// more reports whether another element or member follows the n read so far
// in the container closed by end, consuming the separating comma or the
// closing byte. At the end it records n where open reserved the container's
// size (at); on a syntax error it reports false and sets sc.err.
func (sc *scanner) more(end byte, n, at int) bool {
	switch c := sc.peek(); {
	case c == end:
		sc.pos++
		sc.depth--
		if at >= 0 {
			sc.sizes[at] = int32(n)
		}
		return false
	case n > 0 && c != ',':
		sc.err = sc.errorf("expected ',' or '%c'", end)
		return false
	case n > 0:
		sc.pos++
		sc.skip(false)
	}
	return true
}

// literal consumes true, false or null and checks that s accepts its type.
func (sc *scanner) literal(s *schema, loc string) error {
	for i, l := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(sc.data[sc.pos:], []byte(l)) {
			sc.pos += len(l)
			return s.checkType([...]typeMask{typeBoolean, typeBoolean, typeNull}[i], loc)
		}
	}
	return sc.errorf("invalid literal")
}

// str consumes a string token and returns its content: the bytes between
// the quotes, decoded when they hold escapes and decode is set.
func (sc *scanner) str(decode bool) ([]byte, error) {
	start, esc := sc.pos, false
	for i := start + 1; i < len(sc.data); {
		switch c := sc.data[i]; {
		case c == '"':
			sc.pos = i + 1
			if esc && decode {
				return []byte(unescape(sc.data[start:sc.pos])), nil
			}
			return sc.data[start+1 : i], nil
		case c == '\\':
			n, err := sc.escape(i)
			if err != nil {
				return nil, err
			}
			i, esc = i+n, true
		case c < 0x20:
			return nil, sc.errorAt(i, "control character in string")
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(sc.data[i:])
			if r == utf8.RuneError && n <= 1 {
				return nil, sc.errorAt(i, "invalid UTF-8")
			}
			i += n
		}
	}
	return nil, sc.errorAt(len(sc.data), "unterminated string")
}

// escape checks the escape sequence at i and returns its length.
func (sc *scanner) escape(i int) (int, error) {
	d := sc.data
	if i+1 < len(d) && strings.IndexByte(`"\/bfnrt`, d[i+1]) >= 0 {
		return 2, nil
	}
	if i+1 == len(d) || d[i+1] != 'u' {
		return 0, sc.errorAt(i, "invalid escape")
	}
	switch r, ok := hex4(d[i+2:]); {
	case !ok:
		return 0, sc.errorAt(i, "invalid \\u escape")
	case !utf16.IsSurrogate(r):
		return 6, nil
	case r < 0xDC00 && i+8 <= len(d) && d[i+6] == '\\' && d[i+7] == 'u':
		if lo, ok := hex4(d[i+8:]); ok && lo >= 0xDC00 && lo <= 0xDFFF {
			return 12, nil
		}
	}
	return 0, sc.errorAt(i, "lone surrogate escape")
}

// hex4 reads the four hex digits that start b.
func hex4(b []byte) (rune, bool) {
	r, err := strconv.ParseUint(string(b[:min(len(b), 4)]), 16, 32) // no sign: ParseUint refuses one
	return rune(r), err == nil && len(b) >= 4
}

// unescape decodes a string token, quotes included, that str has checked.
// The strict checks are str's; encoding/json only decodes the escapes. It
// stays out of line: inlined, it would grow the frame of str, which every
// string pays for.
//
//go:noinline
func unescape(tok []byte) string {
	var s string
	json.Unmarshal(tok, &s) // checked: it cannot fail
	return s
}

// number consumes a number token and reports whether it is a plain integer
// token (no fraction, no exponent).
func (sc *scanner) number() (tok []byte, plain bool, err error) {
	d, i := sc.data, sc.pos
	digits := func() bool {
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(d) && d[i] == '-' {
		i++
	}
	first := i
	switch {
	case !digits() && i == len(d):
		return nil, false, sc.errorAt(i, "unexpected end of input")
	case i == first:
		return nil, false, sc.errorAt(i, "invalid value")
	}
	plain = d[first] != '0' || i == first+1 // no leading zero
	ok := plain
	if ok && i < len(d) && d[i] == '.' {
		i++
		ok, plain = digits(), false
	}
	mantissa := d[sc.pos:i]
	if ok && i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		ok, plain = digits(), false
	}
	if tok = d[sc.pos:i]; !ok {
		return nil, false, sc.errorAt(i, "invalid number")
	}
	if len(tok) > numberTokenLimit {
		return nil, false, sc.errorf("number token longer than %d characters", numberTokenLimit)
	}
	if !plain || len(tok) >= 300 { // shorter integer tokens are well inside the double range
		switch f, _ := strconv.ParseFloat(string(tok), 64); {
		case math.IsInf(f, 0):
			return nil, false, sc.errorf("number outside the double range")
		case f == 0 && bytes.ContainsAny(mantissa, "123456789"):
			return nil, false, sc.errorf("number underflows the double range")
		}
	}
	sc.pos = i
	return tok, plain, nil
}

// ---- validation straight from bytes (SPEC §5) ----

// validateBytes checks that data is one strict JSON document within lim that
// s accepts (SPEC §5, §6), in one pass and without building a tree; a nil s
// accepts every strict document. root names the document in problem
// locations. Duplicate keys are refused in validateObject, which compares
// each key, unescaped, with the object's earlier keys.
func (s *schema) validateBytes(data []byte, lim limits, root string) error {
	_, err := scanDocument(data, lim, s, root, nil)
	return err
}

// checkStrict checks that data is one strict JSON document within lim
// (SPEC §6): valid UTF-8, no byte order mark, no duplicate keys (refused in
// validateObject), no lone surrogate, no NaN or Infinity, finite numbers, no
// trailing data. decode runs the same pass before it builds a tree.
func checkStrict(data []byte, lim limits) error { return (*schema)(nil).validateBytes(data, lim, "") }

// validate reads one value and checks it against s.
func (sc *scanner) validate(s *schema, loc string) error {
	s = cmp.Or(s, anySchema)
	if sc.values++; sc.values > sc.lim.values {
		return sc.errorf("more than %d values", sc.lim.values)
	}
	c := sc.peek()
	start := sc.pos
	var err error
	switch c {
	case '{':
		err = sc.validateObject(s, loc)
	case '[':
		err = sc.validateArray(s, loc)
	case '"': // checkString compares with enum and const itself
		raw, err := sc.str(s != anySchema)
		if err != nil || s == anySchema {
			return err
		}
		return s.checkString(raw, loc)
	case 't', 'f', 'n':
		err = sc.literal(s, loc)
	default:
		err = sc.validateNumber(s, loc)
	}
	if err != nil || !s.hasEnum && s.constant == nil {
		return err
	}
	return s.checkEnum(sc.data[start:sc.pos], loc)
}

// checkEnum compares a value that is not a string with const and enum. It
// stays out of validate, whose stack frame every nesting level pays for.
func (s *schema) checkEnum(data []byte, loc string) error {
	switch v := decodeChecked(data); {
	case s.constant != nil && !equal(v, *s.constant):
		return &problem{Location: loc, Message: "value does not equal the schema's const"}
	case s.hasEnum && !slices.ContainsFunc(s.enum, func(e value) bool { return equal(v, e) }):
		return &problem{Location: loc, Message: "value is not one of the schema's enum values"}
	}
	return nil
}

// checkType reports whether s accepts a value of type got: the false
// schema none, a schema without "type" any (SPEC §5), at loc.
func (s *schema) checkType(got typeMask, loc string) error {
	switch {
	case s.never:
		return &problem{Location: loc, Message: "no value is allowed here"}
	case s.types == 0 || s.types&got != 0:
		return nil
	}
	return &problem{Location: loc, Message: fmt.Sprintf("expected %s, got %s", s.types, got)}
}

// keySet finds duplicate keys and items, and missing required properties:
// it holds the first 64 properties of a schema by index in a bit set and
// other keys by their bytes, the first 16 in place and the others in a map,
// so that n additions cost O(n).
type keySet struct {
	props  uint64
	small  [16][]byte
	n      int
	others map[string]bool
}

// has reports whether key, property i of the schema (-1: none), was added.
func (k *keySet) has(i int, key []byte) bool {
	if 0 <= i && i < 64 {
		return k.props&(1<<i) != 0
	}
	return k.others != nil && k.others[string(key)] || slices.ContainsFunc(k.small[:k.n], func(o []byte) bool { return bytes.Equal(o, key) })
}

// add records key, property i of the schema (-1: none), and reports
// whether it was there already.
func (k *keySet) add(i int, key []byte) bool {
	switch {
	case k.has(i, key):
		return true
	case 0 <= i && i < 64:
		k.props |= 1 << i
	case k.n < len(k.small):
		k.small[k.n] = key
		k.n++
	case k.others == nil:
		k.others = map[string]bool{string(key): true}
	default:
		k.others[string(key)] = true
	}
	return false
}

// validateObject reads an object and checks it against s, at loc: each
// key strict and unique (duplicates are compared unescaped, SPEC §6), each
// member against the schema of its property or additionalProperties,
// propertyNames, then required and the property counts. It returns the
// first problem, located.
func (sc *scanner) validateObject(s *schema, loc string) error {
	sized, err := sc.open(s, typeObject, loc)
	if err != nil {
		return err
	}
	var seen keySet
	n := 0
	for ; sc.more('}', n, sized); n++ {
		at := sc.pos
		if sc.peek() != '"' {
			return sc.errorf("expected a string key")
		}
		raw, err := sc.str(true)
		if err != nil {
			return err
		}
		if sc.peek() != ':' {
			return sc.errorf("expected ':' after object key")
		}
		sc.pos++
		i, known := s.propIndex[string(raw)]
		if !known {
			i = -1
		}
		if seen.add(i, raw) {
			return sc.errorAt(at, "duplicate key %s", quote(string(raw)))
		}
		if s.propertyNames != nil {
			if err := s.propertyNames.checkString(raw, here); err != nil {
				err.(*problem).Message = "property name " + err.(*problem).Message
				return relocate(err, child(loc, string(raw)))
			}
		}
		sub := s.propertySchema(i)
		if sub != nil && sub.never {
			return &problem{Location: child(loc, string(raw)), Message: "property is not allowed (allowed: " + s.allowed() + ")"}
		}
		if err := sc.validate(sub, here); err != nil {
			return relocate(err, child(loc, string(raw)))
		}
	}
	if sc.err != nil {
		return sc.err
	}
	sc.memberCount += n
	for _, i := range s.required {
		if !seen.has(i, []byte(s.props[i].name)) {
			return &problem{Location: loc, Message: fmt.Sprintf("missing required property %s", quote(s.props[i].name))}
		}
	}
	return s.checkCount(loc, "has %d properties", n, propertyCounts)
}

// allowed lists, for a message, the properties that an object may have
// under s, which forbids any other: sorted, rendered as a location renders
// a key, and clipped once they pass clipLimit bytes.
func (s *schema) allowed() string {
	var names []string
	for _, p := range s.props {
		if p.declared && (p.schema == nil || !p.schema.never) {
			names = append(names, child("", p.name))
		}
	}
	slices.Sort(names)
	n := 0
	for i, name := range names {
		if n += len(name) + len(", "); n > clipLimit && i > 0 {
			return fmt.Sprintf("%s, … %d more", strings.Join(names[:i], ", "), len(names)-i)
		}
	}
	return cmp.Or(strings.Join(names, ", "), "none")
}

// checkCount applies the pair of count keywords that starts at pair to a
// count n; measured renders the message, built only on failure.
func (s *schema) checkCount(loc, measured string, n, pair int) error {
	switch least, most := s.counts[pair], s.counts[pair+1]; {
	case n < least:
		return &problem{Location: loc, Message: fmt.Sprintf(measured+", fewer than %s %d", n, countKeywords[pair], least)}
	case most >= 0 && n > most:
		return &problem{Location: loc, Message: fmt.Sprintf(measured+", more than %s %d", n, countKeywords[pair+1], most)}
	}
	return nil
}

// validateArray reads an array and checks it against s, at loc: each item
// against items, uniqueItems on the items' exact values, and the item
// counts. It returns the first problem, located.
func (sc *scanner) validateArray(s *schema, loc string) error {
	sized, err := sc.open(s, typeArray, loc)
	if err != nil {
		return err
	}
	var seen keySet
	n := 0
	for ; sc.more(']', n, sized); n++ {
		start := sc.pos
		if err := sc.validate(s.items, here); err != nil {
			return relocate(err, index(loc, n))
		}
		if s.unique && seen.add(-1, uniqueKey(sc.data[start:sc.pos])) {
			return &problem{Location: index(loc, n), Message: "equals an earlier item; uniqueItems requires distinct items"}
		}
	}
	if sc.err != nil {
		return sc.err
	}
	return s.checkCount(loc, "has %d items", n, itemCounts)
}

// uniqueKey renders a checked scalar token so that equal values of its type
// render equally; uniqueItems allows only one scalar item type.
func uniqueKey(tok []byte) []byte {
	switch {
	case tok[0] == '"' && bytes.IndexByte(tok, '\\') < 0:
		return tok[1 : len(tok)-1]
	case tok[0] == '"':
		return []byte(unescape(tok))
	case bytes.ContainsAny(tok, ".eE") || string(tok) == "-0":
		return []byte(exact(string(tok)).RatString()) // 7.0 → "7", like the token 7
	}
	return tok
}

// checkString validates a string instance given its decoded bytes.
func (s *schema) checkString(b []byte, loc string) error {
	if err := s.checkType(typeString, loc); err != nil {
		return err
	}
	// A character is 1 to 4 bytes: count them only when they may break a bound.
	if least, most := s.counts[lengthCounts], s.counts[lengthCounts+1]; len(b)/4 < least || most >= 0 && len(b) > most {
		if err := s.checkCount(loc, "is %d characters", utf8.RuneCount(b), lengthCounts); err != nil {
			return err
		}
	}
	if s.dateTime {
		if err := checkDateTime(b); err != nil {
			return &problem{Location: loc, Message: fmt.Sprintf("%s is not an RFC 3339 date-time: %v", quote(string(b)), err)}
		}
	}
	if s.constant != nil && (s.constant.kind != kindString || s.constant.s != string(b)) {
		return &problem{Location: loc, Message: "value does not equal the schema's const"}
	}
	if s.hasEnum && !slices.ContainsFunc(s.enum, func(e value) bool { return e.kind == kindString && e.s == string(b) }) {
		return &problem{Location: loc, Message: fmt.Sprintf("%s is not one of the schema's enum values", quote(string(b)))}
	}
	return nil
}

// validateNumber reads a number token and checks it against s, at loc: an
// integer by SPEC §5's rule (plain, or integral within ±2^53), then each
// bound in exact decimal arithmetic. The token's text is never rounded.
func (sc *scanner) validateNumber(s *schema, loc string) error {
	tok, plain, err := sc.number()
	if err != nil {
		return err
	}
	got := typeNumber
	if s.types&typeInteger != 0 && s.types&typeNumber == 0 && (plain || isInteger(string(tok), false)) {
		got = typeInteger
	}
	if err := s.checkType(got, loc); err != nil || s.numbers == [5]*decimal{} {
		return err
	}
	n := newDecimal(tok)
	for i, b := range s.numbers {
		if b != nil && numberRules[i].fails(n, b) {
			return &problem{Location: loc, Message: fmt.Sprintf("%s is %s %s", clip(string(tok), 40), numberRules[i].what, b.text)}
		}
	}
	return nil
}

// ---- trees: decoded and encoded ----

// decode reads one strict JSON document into a value tree. Its strict pass
// is scanDocument with no schema (checkStrict's pass), which here also
// records each container's size, so building the tree needs no checks and
// cuts the containers from two arrays of the exact size. The tree's strings and number tokens share one copy of the
// document, so any part of it keeps all of it alive: what outlives the
// document copies what it keeps (a tool its strings), or holds the whole
// tree (a compiled schema, which a full scan lets go).
func decode(data []byte, lim limits) (value, error) {
	checked, err := scanDocument(data, lim, nil, "", make([]int32, 0, 64))
	if err != nil {
		return value{}, err
	}
	// Every value but the top-level one is a member or an element.
	sc := scanner{data: data, text: string(data), sizes: checked.sizes,
		members: make([]member, checked.memberCount), elements: make([]value, checked.values-1-checked.memberCount)}
	return sc.build(), nil
}

// members calls each with the key and the raw bytes of the value of each
// member of data, a document already checked whole, when it is an object;
// it builds no tree, so that a large document is decoded one part at a time.
func members(data []byte, each func(key string, raw []byte)) {
	sc := scanner{data: data, lim: limits{bytes: len(data), depth: math.MaxInt, values: math.MaxInt}}
	if sc.peek() != '{' {
		return
	}
	sc.open(anySchema, typeObject, "")
	for n := 0; sc.more('}', n, -1); n++ {
		key, _ := sc.str(true)
		sc.skip(true) // the colon and the white space around it
		start := sc.pos
		sc.validate(nil, "")
		each(string(key), data[start:sc.pos])
	}
}

// decodeChecked decodes a document already known to be strict and within
// the bounds it was checked against: a tool argument after its validation.
func decodeChecked(data []byte) value {
	v, _ := decode(data, limits{bytes: len(data), depth: math.MaxInt, values: math.MaxInt})
	return v
}

// build reads a value that decode's strict pass has accepted: white space,
// commas and colons only separate what it reads.
func (sc *scanner) build() value {
	sc.skip(true)
	v := value{offset: int32(sc.pos)}
	switch c := sc.data[sc.pos]; c {
	case '{', '[':
		sc.pos++
		n := int(sc.sizes[0])
		sc.sizes = sc.sizes[1:]
		if c == '{' {
			v.kind, v.obj, sc.members = kindObject, sc.members[:n:n], sc.members[n:]
			for i := range v.obj {
				sc.skip(true)
				v.obj[i] = member{sc.buildString(), sc.build()}
			}
		} else {
			v.kind, v.arr, sc.elements = kindArray, sc.elements[:n:n], sc.elements[n:]
			for i := range v.arr {
				v.arr[i] = sc.build()
			}
		}
		sc.skip(true)
		sc.pos++
	case '"':
		v.kind, v.s = kindString, sc.buildString()
	case 't', 'f', 'n':
		sc.literal(anySchema, "") // checked: it cannot fail
		if v.b = c == 't'; c != 'n' {
			v.kind = kindBool
		}
	default:
		start := sc.pos
		for sc.pos < len(sc.data) && strings.IndexByte("+-.0123456789eE", sc.data[sc.pos]) >= 0 {
			sc.pos++
		}
		v.kind, v.s = kindNumber, sc.text[start:sc.pos]
	}
	return v
}

// buildString reads a checked string token: without escapes it is a slice
// of the document's text.
func (sc *scanner) buildString() string {
	start := sc.pos
	n := bytes.IndexByte(sc.data[start+1:], '"')
	if bytes.IndexByte(sc.data[start+1:start+1+n], '\\') < 0 {
		sc.pos = start + n + 2
		return sc.text[start+1 : sc.pos-1]
	}
	sc.str(false) // checked: it cannot fail
	return unescape(sc.data[start:sc.pos])
}

// appendJSON appends the compact encoding of v. Number tokens are copied as
// they were read.
func appendJSON(b []byte, v value) []byte {
	switch v.kind {
	case kindNull:
		return append(b, "null"...)
	case kindBool:
		return strconv.AppendBool(b, v.b)
	case kindNumber:
		return append(b, v.s...)
	case kindString:
		return appendString(b, v.s)
	}
	b = append(b, "[{"[v.kind-kindArray]) // an array or an object, whose other slice is empty
	for i := range len(v.arr) + len(v.obj) {
		if i > 0 {
			b = append(b, ',')
		}
		if v.kind == kindArray {
			b = appendJSON(b, v.arr[i])
		} else {
			b = appendJSON(append(appendString(b, v.obj[i].key), ':'), v.obj[i].val)
		}
	}
	return append(b, "]}"[v.kind-kindArray])
}

// appendString appends s, valid UTF-8, as a JSON string: '"', '\\' and
// every control character (Unicode Cc: C0, DEL and C1, SPEC §9) escaped,
// every other byte copied as it is, in runs.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c != 0x7f && !c1Control(s, i) {
			continue
		}
		b = append(b, s[start:i]...)
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == 0xc2: // U+0080–U+009F: the code point is its second byte
			i++
			c = s[i]
			fallthrough
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// c1Control reports whether a C1 control character (U+0080–U+009F, the
// UTF-8 bytes C2 80 to C2 9F) starts at s[i].
func c1Control(s string, i int) bool {
	return s[i] == 0xc2 && i+1 < len(s) && s[i+1]-0x80 < 0x20
}

// encode returns the compact encoding of v.
func encode(v value) []byte { return appendJSON(nil, v) }

// measure counts in v's compact encoding (appendJSON's) what the scanner
// counts against limits: bytes, nesting depth and values.
func measure(v value) (size, depth, values int) {
	switch v.kind {
	case kindNull:
		return len("null"), 0, 1
	case kindBool:
		return len(strconv.FormatBool(v.b)), 0, 1
	case kindNumber:
		return len(v.s), 0, 1
	case kindString:
		return quotedLength(v.s), 0, 1
	}
	size, depth, values = 1+max(len(v.arr)+len(v.obj), 1), 1, 1 // brackets and commas
	add := func(e value, key int) {
		s, d, n := measure(e)
		size, depth, values = size+key+s, max(depth, d+1), values+n
	}
	for _, e := range v.arr {
		add(e, 0)
	}
	for _, m := range v.obj {
		add(m.val, quotedLength(m.key)+1)
	}
	return size, depth, values
}

// quotedLength is the length of appendString's encoding of s.
func quotedLength(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c == '\n' {
			n++
		} else if c < 0x20 || c == 0x7f {
			n += 5
		} else if c1Control(s, i) {
			n += 4 // two bytes become six
		}
	}
	return n
}

// ---- compiling (SPEC §5) ----

// compileSchema compiles v, found at loc, and adds every rule it breaks to
// ps. It returns nil when v breaks one.
func compileSchema(v value, loc string, ps *problems) *schema {
	before := len(*ps)
	if s := compilePartial(v, loc, ps); len(*ps) == before {
		return s
	}
	return nil
}

// compilePartial checks the per-schema bounds of SPEC §5 and compiles v,
// adding every rule it breaks to ps. Unless v is too large, it returns a
// schema even then, a partial one that still tells what each property
// declares.
func compilePartial(v value, loc string, ps *problems) *schema {
	const tooLarge = "the schema is too large (64 KiB, depth 16 and 2048 values at most): "
	switch size, depth, values := measure(v); {
	case size > schemaLimits.bytes:
		ps.add(loc, tooLarge+"%d bytes, more than %d", size, schemaLimits.bytes)
	case depth > schemaLimits.depth:
		ps.add(loc, tooLarge+"nesting deeper than %d", schemaLimits.depth)
	case values > schemaLimits.values:
		ps.add(loc, tooLarge+"more than %d values", schemaLimits.values)
	default:
		return compile(v, &location{root: loc, keys: make([]string, 0, schemaLimits.depth+1)}, ps)
	}
	return nil
}

// location is the JSON location of the value being compiled: a root and
// the keys below it, pushed and popped as compile descends and rendered
// only when a problem names them.
type location struct {
	root string
	keys []string
}

func (l *location) push(key string) { l.keys = append(l.keys, key) }

func (l *location) pop() { l.keys = l.keys[:len(l.keys)-1] }

func (l *location) String() string {
	s := l.root
	for _, k := range l.keys {
		s = child(s, k)
	}
	return s
}

// compile compiles the schema v found at loc. It lists the subset's
// keywords (SPEC §5) and checks each value as the meta-schema would; every
// problem goes to ps. It returns nil only when v is not a schema.
func compile(v value, loc *location, ps *problems) *schema {
	switch {
	case v.kind == kindBool && v.b:
		return anySchema
	case v.kind == kindBool:
		return falseSchema
	case v.kind != kindObject:
		ps.add(loc.String(), "a schema must be an object or a boolean")
		return nil
	}
	s := &schema{counts: anySchema.counts}
	var required value
	for i, m := range v.obj {
		loc.push(m.key)
		at, val := loc, m.val // the keyword's location, until loc.pop below
		if k, typed := keywordKinds[m.key]; typed && val.kind != k {
			ps.add(at.String(), "%s must be %s", m.key, map[kind]string{kindString: "a string", kindArray: "an array", kindBool: "a boolean", kindObject: "an object"}[k])
			loc.pop()
			continue
		}
		switch m.key {
		case "type":
			s.types = compileType(val, at, ps)
		case "enum":
			s.enum, s.hasEnum = val.arr, true
		case "const":
			s.constant = &v.obj[i].val
		case "properties":
			s.props, s.propIndex = make([]property, 0, len(val.obj)), make(map[string]int, len(val.obj)) // each grows once
			for _, p := range val.obj {
				loc.push(p.key)
				s.addProperty(property{name: p.key, schema: compile(p.val, loc, ps), declared: true})
				loc.pop()
			}
		case "required":
			if required = val; val.kind != kindArray {
				ps.add(at.String(), "required must be an array of strings")
			}
		case "additionalProperties":
			s.additional = compile(val, at, ps)
		case "propertyNames":
			s.propertyNames = compile(val, at, ps)
		case "items":
			s.items = compile(val, at, ps)
		case "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties":
			s.counts[slices.Index(countKeywords[:], m.key)] = countKeyword(val, at, ps)
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
			if val.kind != kindNumber {
				ps.add(at.String(), "must be a number")
				break
			}
			d := newDecimal([]byte(val.s))
			d.text = val.s
			s.numbers[slices.IndexFunc(numberRules[:], func(r numberRule) bool { return r.keyword == m.key })] = &d
			if m.key == "multipleOf" && d.exact().Sign() <= 0 {
				ps.add(at.String(), "multipleOf must be greater than 0")
			}
		case "uniqueItems":
			s.unique = val.b
		case "format":
			if val.s != "date-time" {
				ps.add(at.String(), "format %s is not supported: bridge v1 asserts only \"date-time\"", quote(val.s))
			}
			s.dateTime = true
		case "title", "description", "examples", "deprecated", "readOnly", "writeOnly", "default": // annotations
		default:
			ps.add(at.String(), "keyword %s is not in the bridge-v1 schema subset: %s", quote(m.key), cmp.Or(subsetFixes[m.key], "remove it"))
		}
		loc.pop()
	}
	for i, r := range required.arr { // an array of distinct strings
		j, ok := s.propIndex[r.s]
		switch {
		case r.kind != kindString:
			ps.add(index(child(loc.String(), "required"), i), "required entries must be strings")
			continue
		case slices.ContainsFunc(required.arr[:i], func(e value) bool { return e.kind == kindString && e.s == r.s }):
			ps.add(index(child(loc.String(), "required"), i), "required lists %s twice", quote(r.s))
			continue
		case !ok:
			j = s.addProperty(property{name: r.s})
		}
		s.required = append(s.required, j)
		if p := s.propertySchema(j); p != nil && p.never { // ajv's strict mode refuses it too
			ps.add(index(child(loc.String(), "required"), i), "%s is required, but the schema forbids the property, so no instance is valid: add it to properties, or drop it from required", quote(r.s))
		}
	}
	if it := s.items; s.unique && (it == nil || it.types == 0 || it.types&^scalarTypes != 0 || it.types&(it.types-1) != 0) {
		ps.add(child(loc.String(), "uniqueItems"), "uniqueItems needs \"items\" that declares exactly one scalar type")
	}
	return s
}

// subsetFixes say what to do instead of the keywords outside the subset
// that authors reach for; any other is removed.
var subsetFixes = map[string]string{"$ref": "inline the schema it points to", "$defs": "inline its schemas where they are used",
	"definitions": "inline its schemas where they are used", "pattern": "remove it, and check the value in the plugin's view",
	"anyOf": "use one schema: a type list, or an enum", "oneOf": "use one schema: a type list, or an enum", "allOf": "merge its schemas into one"}

// keywordKinds are the kinds that keywords of one kind must have; compile
// reports a keyword of another kind and reads no further.
var keywordKinds = map[string]kind{"enum": kindArray, "properties": kindObject, "uniqueItems": kindBool, "format": kindString,
	"title": kindString, "description": kindString, "examples": kindArray, "deprecated": kindBool, "readOnly": kindBool, "writeOnly": kindBool}

func (s *schema) addProperty(p property) int {
	if s.propIndex == nil {
		s.propIndex = make(map[string]int)
	}
	s.propIndex[p.name] = len(s.props)
	s.props = append(s.props, p)
	return len(s.props) - 1
}

func compileType(v value, loc *location, ps *problems) (mask typeMask) {
	names := []value{v}
	if v.kind == kindArray {
		names = v.arr
	}
	if len(names) == 0 {
		ps.add(loc.String(), "type must not be an empty array")
	}
	for _, n := range names {
		switch i := slices.Index(typeNames[:], n.s); {
		case n.kind != kindString || i < 0:
			ps.add(loc.String(), "type must be one of the seven type names, or an array of them")
		case mask&(1<<i) != 0:
			ps.add(loc.String(), "type lists %s twice", quote(n.s))
		default:
			mask |= 1 << i
			continue
		}
		return 0
	}
	return mask
}

// countKeyword reads a non-negative integer keyword value; a count past
// the int range is math.MaxInt.
func countKeyword(v value, loc *location, ps *problems) int {
	plain := !strings.ContainsAny(v.s, ".eE")
	if v.kind != kindNumber || !isInteger(v.s, plain) || strings.HasPrefix(v.s, "-") && exact(v.s).Sign() < 0 {
		ps.add(loc.String(), "must be a non-negative integer")
		return -1
	}
	if !plain {
		v.s = exact(v.s).RatString() // integral
	}
	n, _ := strconv.Atoi(v.s) // out of range, it is math.MaxInt
	return n
}

// ---- text helpers ----

// clipLimit bounds how much hostile text a message may echo (SPEC §4).
const clipLimit = 200

// quote renders s for a message, clipped to clipLimit characters.
func quote(s string) string {
	if utf8.RuneCountInString(s) > clipLimit {
		return strconv.Quote(string([]rune(s)[:clipLimit])) + "…"
	}
	return strconv.Quote(s)
}

// clip shortens hostile text to n bytes for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n-- // never split a character
	}
	return s[:n] + "…"
}

// badSegment reports whether a slash-separated path has an empty, . or ..
// segment.
func badSegment(path string) bool {
	return slices.ContainsFunc(strings.Split(path, "/"), func(seg string) bool { return seg == "" || seg == "." || seg == ".." })
}

// hasControl reports whether s holds a control character: Unicode Cc, the
// C0 controls, DEL and the C1 controls U+0080–U+009F (SPEC §9).
func hasControl(s string) bool { return strings.ContainsFunc(s, unicode.IsControl) }

// printable keeps hostile text from driving a terminal or a log reader:
// control characters become U+FFFD.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return utf8.RuneError
		}
		return r
	}, s)
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
