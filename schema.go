package main

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

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
	kind kind
	b    bool
	s    string // string content, or the number token
	arr  []value
	obj  []member
}

type member struct {
	key string
	val value
}

// get returns the member named key of an object value.
func (v value) get(key string) (value, bool) {
	for _, m := range v.obj {
		if m.key == key {
			return m.val, true
		}
	}
	return value{}, false
}

// syntaxError reports a document that is not strict JSON within its limits.
type syntaxError struct {
	offset, line, column int
	msg                  string
	loc                  string // the JSON location of the value being read
}

func (e *syntaxError) Error() string {
	if e.line == 0 {
		return e.msg
	}
	return fmt.Sprintf("invalid JSON at line %d, column %d (byte %d): %s", e.line, e.column, e.offset, e.msg)
}

// at is the syntax error as a problem of the document named root.
func (e *syntaxError) at(root string) *problem {
	return &problem{Location: relocated(e.loc, root), Message: e.Error(), Line: e.line, Column: e.column}
}

// scanner is the one strict tokenizer under every document the bridge reads.
// It enforces the depth and value limits while it reads.
type scanner struct {
	data        []byte
	pos         int
	depth       int
	values      int
	memberCount int     // object members read
	sizes       []int32 // when not nil, the size of each container read, in order
	nextSize    int     // build: the next container's index in sizes
	lim         limits
	scratch     []byte

	// Decoding state: the arenas containers are cut from, and the document
	// as a string.
	members  []member
	elements []value
	text     string
}

func newScanner(data []byte, lim limits) (scanner, error) {
	if len(data) > lim.bytes {
		return scanner{}, &syntaxError{msg: fmt.Sprintf("document is larger than %d bytes", lim.bytes)}
	}
	if bytes.HasPrefix(data, []byte("\xEF\xBB\xBF")) {
		return scanner{}, &syntaxError{0, 1, 1, "byte order mark is not allowed", here}
	}
	return scanner{data: data, lim: lim}, nil
}

func (sc *scanner) errorf(format string, args ...any) error {
	before := sc.data[:min(sc.pos, len(sc.data))]
	line := bytes.Count(before, []byte("\n")) + 1
	column := len(before) - bytes.LastIndexByte(before, '\n')
	return &syntaxError{sc.pos, line, column, fmt.Sprintf(format, args...), here}
}

func (sc *scanner) skipSpace() {
	for sc.pos < len(sc.data) {
		switch sc.data[sc.pos] {
		case ' ', '\t', '\n', '\r':
			sc.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end of input.
func (sc *scanner) peek() byte {
	sc.skipSpace()
	if sc.pos < len(sc.data) {
		return sc.data[sc.pos]
	}
	return 0
}

// finish checks that only white space follows the top-level value.
func (sc *scanner) finish() error {
	if sc.skipSpace(); sc.pos < len(sc.data) {
		return sc.errorf("unexpected data after the top-level value")
	}
	return nil
}

// count charges one value against the limit.
func (sc *scanner) count() error {
	sc.values++
	if sc.values > sc.lim.values {
		return sc.errorf("more than %d values", sc.lim.values)
	}
	return nil
}

// open consumes '[' or '{' and enters one level of nesting.
func (sc *scanner) open() error {
	sc.depth++
	if sc.depth > sc.lim.depth {
		return sc.errorf("nesting deeper than %d", sc.lim.depth)
	}
	sc.pos++
	return nil
}

// recordSize reserves the size of the container just opened, when the
// scanner records sizes for build.
func (sc *scanner) recordSize() int {
	if sc.sizes == nil {
		return -1
	}
	sc.sizes = append(sc.sizes, 0)
	return len(sc.sizes) - 1
}

func (sc *scanner) setSize(at, n int) {
	if at >= 0 {
		sc.sizes[at] = int32(n)
	}
}

// more reports whether another element or member follows in the container
// closed by end, consuming the separating comma or the closing byte.
func (sc *scanner) more(end byte, first bool) (bool, error) {
	c := sc.peek()
	if c == end {
		sc.pos++
		sc.depth--
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, sc.errorf("expected ',' or '%c'", end)
		}
		sc.pos++
		sc.skipSpace()
	}
	return true, nil
}

// literal consumes true, false or null.
func (sc *scanner) literal() (kind, bool, error) {
	for _, l := range [...]struct {
		text string
		k    kind
		b    bool
	}{{"true", kindBool, true}, {"false", kindBool, false}, {"null", kindNull, false}} {
		if bytes.HasPrefix(sc.data[sc.pos:], []byte(l.text)) {
			sc.pos += len(l.text)
			return l.k, l.b, nil
		}
	}
	return 0, false, sc.errorf("invalid literal")
}

// str consumes a string token. It returns the raw bytes between the quotes,
// whether they hold escapes, and whether they are all ASCII.
func (sc *scanner) str() (raw []byte, esc, ascii bool, err error) {
	start := sc.pos + 1
	i := start
	ascii = true
	for i < len(sc.data) {
		c := sc.data[i]
		switch {
		case c == '"':
			sc.pos = i + 1
			return sc.data[start:i], esc, ascii, nil
		case c == '\\':
			esc = true
			n, e := sc.escape(i)
			if e != nil {
				return nil, false, false, e
			}
			i += n
		case c < 0x20:
			sc.pos = i
			return nil, false, false, sc.errorf("control character in string")
		case c < utf8.RuneSelf:
			i++
		default:
			ascii = false
			r, n := utf8.DecodeRune(sc.data[i:])
			if r == utf8.RuneError && n <= 1 {
				sc.pos = i
				return nil, false, false, sc.errorf("invalid UTF-8")
			}
			i += n
		}
	}
	sc.pos = len(sc.data)
	return nil, false, false, sc.errorf("unterminated string")
}

// escape checks the escape sequence at i and returns its length.
func (sc *scanner) escape(i int) (int, error) {
	if i+1 >= len(sc.data) {
		sc.pos = i
		return 0, sc.errorf("unterminated escape")
	}
	switch sc.data[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
		r, ok := hex4(sc.data[i+2:])
		if !ok {
			sc.pos = i
			return 0, sc.errorf("invalid \\u escape")
		}
		if r < 0xD800 || r > 0xDFFF {
			return 6, nil
		}
		if r < 0xDC00 {
			if lo, ok := hex4(sc.data[min(i+8, len(sc.data)):]); ok && i+7 < len(sc.data) &&
				sc.data[i+6] == '\\' && sc.data[i+7] == 'u' && lo >= 0xDC00 && lo <= 0xDFFF {
				return 12, nil
			}
		}
		sc.pos = i
		return 0, sc.errorf("lone surrogate escape")
	}
	sc.pos = i
	return 0, sc.errorf("invalid escape")
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 || b[0] == '+' || b[0] == '-' {
		return 0, false
	}
	r, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(r), err == nil
}

// unescape decodes raw string bytes that str has already checked.
func (sc *scanner) unescape(raw []byte) string { return string(sc.unescapeBytes(raw)) }

// unescapeBytes decodes into the scanner's scratch buffer, valid until the
// next call.
func (sc *scanner) unescapeBytes(raw []byte) []byte {
	b := sc.scratch[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			b = append(b, c)
			i++
			continue
		}
		switch raw[i+1] {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, _ := hex4(raw[i+2:])
			if r >= 0xD800 && r < 0xDC00 {
				lo, _ := hex4(raw[i+8:])
				r = (r-0xD800)<<10 | (lo - 0xDC00) + 0x10000
				i += 6
			}
			b = utf8.AppendRune(b, r)
			i += 6
			continue
		default:
			b = append(b, raw[i+1])
		}
		i += 2
	}
	sc.scratch = b
	return b
}

// number consumes a number token and reports whether it is a plain integer
// token (no fraction, no exponent).
func (sc *scanner) number() (tok []byte, plain bool, err error) {
	start, i := sc.pos, sc.pos
	d := sc.data
	if i < len(d) && d[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		digits()
	default:
		sc.pos = i
		return nil, false, sc.errorf("invalid value")
	}
	plain = true
	if i < len(d) && d[i] == '.' {
		i++
		plain = false
		if !digits() {
			sc.pos = i
			return nil, false, sc.errorf("missing digits after decimal point")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		plain = false
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			sc.pos = i
			return nil, false, sc.errorf("missing digits in exponent")
		}
	}
	tok = d[start:i]
	if len(tok) > numberTokenLimit {
		return nil, false, sc.errorf("number token longer than %d characters", numberTokenLimit)
	}
	if plain && len(tok) < 300 {
		sc.pos = i
		return tok, true, nil // well inside the double range
	}
	f, _ := strconv.ParseFloat(string(tok), 64)
	switch {
	case f > 1.7976931348623157e308 || f < -1.7976931348623157e308:
		return nil, false, sc.errorf("number outside the double range")
	case f == 0 && len(bytes.Trim(mantissa(tok), "-0.")) > 0:
		return nil, false, sc.errorf("number underflows the double range")
	}
	sc.pos = i
	return tok, plain, nil
}

// mantissa is a number token without its exponent.
func mantissa(tok []byte) []byte {
	if i := bytes.IndexAny(tok, "eE"); i >= 0 {
		return tok[:i]
	}
	return tok
}

// decode reads one strict JSON document into a value tree. The validator's
// strict pass checks it first and records each container's size, so
// building the tree needs no checks. The tree is cheap: its strings and
// number tokens share one copy of the document, and its containers are cut
// from two arrays of the exact size. So any part of it keeps all of it
// alive; what outlives the document (a compiled schema, a tool) copies what
// it keeps (see detach).
func decode(data []byte, lim limits) (value, error) {
	checked, err := newScanner(data, lim)
	if err == nil {
		checked.sizes = make([]int32, 0, 64)
		err = checked.validate(nil, "")
	}
	if err == nil {
		err = checked.finish()
	}
	if e, ok := err.(*syntaxError); ok {
		return value{}, e.at("")
	}
	// Every value but the top-level one is a member or an element.
	sc := scanner{data: data, text: string(data), sizes: checked.sizes,
		members: make([]member, checked.memberCount), elements: make([]value, checked.values-1-checked.memberCount)}
	return sc.build(), nil
}

// build reads a document that is already known to be valid, within the
// bounds it was checked against.
func build(data []byte) value {
	v, _ := decode(data, limits{bytes: len(data), depth: math.MaxInt, values: math.MaxInt})
	return v
}

// build reads a value that decode's strict pass has accepted.
func (sc *scanner) build() value {
	switch c := sc.peek(); c {
	case '{', '[':
		sc.pos++
		n := int(sc.sizes[sc.nextSize])
		sc.nextSize++
		v := value{kind: kindArray}
		if c == '{' {
			v = value{kind: kindObject, obj: sc.members[:n:n]}
			sc.members = sc.members[n:]
		} else {
			v.arr, sc.elements = sc.elements[:n:n], sc.elements[n:]
		}
		for i := range n {
			if i > 0 {
				sc.peek()
				sc.pos++ // the comma
			}
			if c == '[' {
				v.arr[i] = sc.build()
				continue
			}
			sc.peek()
			v.obj[i].key = sc.buildString()
			sc.peek()
			sc.pos++ // the colon
			v.obj[i].val = sc.build()
		}
		sc.peek()
		sc.pos++
		return v
	case '"':
		return value{kind: kindString, s: sc.buildString()}
	case 't', 'f', 'n':
		k, b, _ := sc.literal()
		return value{kind: k, b: b}
	}
	start := sc.pos
	for sc.pos < len(sc.data) && strings.IndexByte("+-.0123456789eE", sc.data[sc.pos]) >= 0 {
		sc.pos++
	}
	return value{kind: kindNumber, s: sc.text[start:sc.pos]}
}

// buildString reads a checked string token: without escapes it is a slice
// of the document's text.
func (sc *scanner) buildString() string {
	start := sc.pos + 1
	if n := bytes.IndexByte(sc.data[start:], '"'); n >= 0 && bytes.IndexByte(sc.data[start:start+n], '\\') < 0 {
		sc.pos = start + n + 1
		return sc.text[start : start+n]
	}
	raw, _, _, _ := sc.str()
	return sc.unescape(raw)
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
	case kindArray:
		b = append(b, '[')
		for i, e := range v.arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		for i, m := range v.obj {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, m.key)
			b = append(b, ':')
			b = appendJSON(b, m.val)
		}
		return append(b, '}')
	}
}

// appendString appends s as a JSON string: '"', '\\' and control
// characters escaped, every other byte copied as it is, in runs.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// encode returns the compact encoding of v.
func encode(v value) []byte { return appendJSON(nil, v) }

// clipLimit bounds how much hostile text a message may echo (SPEC §4).
const clipLimit = 200

// quote renders s for a message, clipped to clipLimit characters.
func quote(s string) string {
	if utf8.RuneCountInString(s) > clipLimit {
		r := []rune(s)
		return strconv.Quote(string(r[:clipLimit])) + "…"
	}
	return strconv.Quote(s)
}

// ---- exact numbers ----

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
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case kindNull:
		return true
	case kindBool:
		return a.b == b.b
	case kindNumber:
		return a.s == b.s || exact(a.s).Cmp(exact(b.s)) == 0
	case kindString:
		return a.s == b.s
	case kindArray:
		return slices.EqualFunc(a.arr, b.arr, equal)
	}
	if len(a.obj) != len(b.obj) {
		return false
	}
	for _, m := range a.obj {
		if o, ok := b.get(m.key); !ok || !equal(m.val, o) {
			return false
		}
	}
	return true
}

// ---- the schema subset ----

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

var typeNames = map[string]typeMask{
	"null": typeNull, "boolean": typeBoolean, "integer": typeInteger, "number": typeNumber,
	"string": typeString, "array": typeArray, "object": typeObject,
}

// schema is a compiled schema of the bridge-v1 subset (SPEC §5).
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
	minItems      int
	maxItems      int
	minLength     int
	maxLength     int
	minProps      int
	maxProps      int
	minimum       *bound
	maximum       *bound
	exclMin       *bound
	exclMax       *bound
	multipleOf    *bound
}

// property is a name the schema declares in properties or required.
type property struct {
	name     string
	schema   *schema // nil when only required: additional applies
	declared bool
}

// bound is a numeric keyword value, with a fast path for int64 values.
type bound struct {
	rat   *big.Rat // nil for a plain integer token, which i64 holds
	text  string
	i64   int64
	isI64 bool
}

var falseSchema = &schema{never: true}

// problem is one rule broken at a JSON location. It is the error of the
// manifest rules, the schema compiler and the validator.
type problem struct {
	Location string `json:"location"`
	Message  string `json:"message"`
	Line     int    `json:"line,omitempty"` // of a syntax error
	Column   int    `json:"column,omitempty"`
	Tool     string `json:"tool,omitempty"` // the name of the manifest's tool at Location
}

func (p *problem) Error() string {
	if p.Location == "" {
		return p.Message
	}
	return p.Location + ": " + p.Message
}

// problems collects the broken rules of one document, at most problemLimit
// of them.
type problems []problem

const problemLimit = 100

func (ps *problems) add(loc, format string, args ...any) {
	ps.put(problem{Location: loc, Message: fmt.Sprintf(format, args...)})
}

func (ps *problems) put(p problem) {
	switch {
	case len(*ps) < problemLimit:
		*ps = append(*ps, p)
	case len(*ps) == problemLimit:
		*ps = append(*ps, problem{Message: fmt.Sprintf("more than %d problems: fix these and check again", problemLimit)})
	}
}

// addErr adds a validator error, a *problem.
func (ps *problems) addErr(err error) {
	if p, ok := err.(*problem); ok {
		ps.put(*p)
		return
	}
	ps.add("", "%v", err)
}

// child renders the location of an object member; a long key is quoted,
// which clips it.
func child(loc, key string) string {
	plain := key != "" && len(key) <= clipLimit
	for i := 0; i < len(key) && plain; i++ {
		plain = isAlnum(key[i]) || strings.IndexByte("_$-", key[i]) >= 0
	}
	switch {
	case !plain:
		return loc + "[" + quote(key) + "]"
	case loc == "":
		return key
	}
	return loc + "." + key
}

func index(loc string, i int) string { return loc + "[" + strconv.Itoa(i) + "]" }

// compileSchema compiles v, found at loc, and reports every broken rule,
// after checking the per-schema bounds on its compact encoding.
func compileSchema(v value, loc string, ps *problems) *schema {
	sc, err := newScanner(encode(v), schemaLimits)
	if err == nil {
		err = sc.validate(nil, "")
	}
	if se, ok := err.(*syntaxError); ok {
		ps.add(loc, "the schema is too large (64 KiB, depth 16 and 2048 values at most): %s", se.msg)
		return nil
	}
	return compile(v, &location{root: loc, segments: make([]segment, 0, schemaLimits.depth+1)}, ps)
}

// location is the JSON location of the value being compiled: segments are
// pushed and popped as compile descends, and rendered only when a problem
// names them.
type location struct {
	root     string
	segments []segment
}

// segment is a member key, or an element index when index >= 0.
type segment struct {
	key   string
	index int
}

func (l *location) push(key string) { l.segments = append(l.segments, segment{key, -1}) }
func (l *location) pop()            { l.segments = l.segments[:len(l.segments)-1] }

func (l *location) String() string {
	s := l.root
	for _, g := range l.segments {
		if g.index >= 0 {
			s = index(s, g.index)
		} else {
			s = child(s, g.key)
		}
	}
	return s
}

// compile compiles the schema v found at loc. It lists the subset's
// keywords (SPEC §5) and checks each value as the meta-schema would; every
// problem goes to ps.
func compile(v value, loc *location, ps *problems) *schema {
	s := &schema{minItems: -1, maxItems: -1, minLength: -1, maxLength: -1, minProps: -1, maxProps: -1}
	switch {
	case v.kind == kindBool && !v.b:
		return falseSchema
	case v.kind == kindBool:
		return s
	case v.kind != kindObject:
		ps.add(loc.String(), "a schema must be an object or a boolean")
		return nil
	}
	before := len(*ps)
	var required value
	for _, m := range v.obj {
		loc.push(m.key)
		at, val := loc, m.val // the keyword's location, until loc.pop below
		switch m.key {
		case "type":
			s.types = compileType(val, at, ps)
		case "enum":
			if ps.want(m, kindArray, at) {
				s.enum, s.hasEnum = val.arr, true
			}
		case "const":
			s.constant = &val
		case "properties":
			s.compileProperties(val, at, ps)
		case "required":
			if checkStringSet(val, at, ps) {
				required = val
			}
		case "additionalProperties":
			s.additional = compile(val, at, ps)
		case "propertyNames":
			s.propertyNames = compile(val, at, ps)
		case "items":
			s.items = compile(val, at, ps)
		case "minItems":
			s.minItems = countKeyword(val, at, ps)
		case "maxItems":
			s.maxItems = countKeyword(val, at, ps)
		case "minLength":
			s.minLength = countKeyword(val, at, ps)
		case "maxLength":
			s.maxLength = countKeyword(val, at, ps)
		case "minProperties":
			s.minProps = countKeyword(val, at, ps)
		case "maxProperties":
			s.maxProps = countKeyword(val, at, ps)
		case "minimum":
			s.minimum = numberKeyword(val, at, ps)
		case "maximum":
			s.maximum = numberKeyword(val, at, ps)
		case "exclusiveMinimum":
			s.exclMin = numberKeyword(val, at, ps)
		case "exclusiveMaximum":
			s.exclMax = numberKeyword(val, at, ps)
		case "multipleOf":
			if s.multipleOf = numberKeyword(val, at, ps); s.multipleOf != nil && s.multipleOf.exact().Sign() <= 0 {
				ps.add(at.String(), "multipleOf must be greater than 0")
			}
		case "uniqueItems":
			s.unique = ps.want(m, kindBool, at) && val.b
		case "format":
			if ps.want(m, kindString, at) && val.s != "date-time" {
				ps.add(at.String(), "format %s is not supported: bridge v1 asserts only \"date-time\"", quote(val.s))
			}
			s.dateTime = true
		case "title", "description":
			ps.want(m, kindString, at)
		case "examples":
			ps.want(m, kindArray, at)
		case "deprecated", "readOnly", "writeOnly":
			ps.want(m, kindBool, at)
		case "default":
		default:
			ps.add(at.String(), "keyword %s is not in the bridge-v1 schema subset", quote(m.key))
		}
		loc.pop()
	}
	for _, r := range required.arr {
		i, ok := s.propIndex[r.s]
		if !ok {
			i = s.addProperty(property{name: r.s})
		}
		s.required = append(s.required, i)
	}
	if it := s.items; len(*ps) == before && s.unique && (it == nil || it.types == 0 || it.types&^scalarTypes != 0 || it.types&(it.types-1) != 0) {
		ps.add(child(loc.String(), "uniqueItems"), "uniqueItems needs \"items\" that declares exactly one scalar type")
	}
	if len(*ps) > before {
		return nil
	}
	return s
}

// want reports whether the keyword m, found at loc, has kind k, and a
// problem when it has not.
func (ps *problems) want(m member, k kind, loc *location) bool {
	if m.val.kind != k {
		ps.add(loc.String(), "%s must be %s", m.key, map[kind]string{kindString: "a string", kindArray: "an array", kindBool: "a boolean"}[k])
	}
	return m.val.kind == k
}

func (s *schema) addProperty(p property) int {
	if s.propIndex == nil {
		s.propIndex = make(map[string]int)
	}
	s.propIndex[p.name] = len(s.props)
	s.props = append(s.props, p)
	return len(s.props) - 1
}

func (s *schema) compileProperties(v value, loc *location, ps *problems) {
	if v.kind != kindObject {
		ps.add(loc.String(), "properties must be an object")
		return
	}
	s.props = slices.Grow(s.props, len(v.obj))
	if s.propIndex == nil {
		s.propIndex = make(map[string]int, len(v.obj))
	}
	for _, m := range v.obj {
		loc.push(m.key)
		s.addProperty(property{name: m.key, schema: compile(m.val, loc, ps), declared: true})
		loc.pop()
	}
}

func compileType(v value, loc *location, ps *problems) typeMask {
	names := []value{v}
	if v.kind == kindArray {
		if len(v.arr) == 0 {
			ps.add(loc.String(), "type must not be an empty array")
			return 0
		}
		names = v.arr
	}
	var mask typeMask
	for _, n := range names {
		t, ok := typeNames[n.s]
		switch {
		case n.kind != kindString || !ok:
			ps.add(loc.String(), "type must be one of the seven type names, or an array of them")
			return 0
		case mask&t != 0:
			ps.add(loc.String(), "type lists %s twice", quote(n.s))
			return 0
		}
		mask |= t
	}
	return mask
}

// checkStringSet checks required: an array of distinct strings.
func checkStringSet(v value, loc *location, ps *problems) bool {
	if v.kind != kindArray {
		ps.add(loc.String(), "required must be an array of strings")
		return false
	}
	for i, e := range v.arr {
		if e.kind != kindString {
			ps.add(index(loc.String(), i), "required entries must be strings")
			return false
		}
		for _, f := range v.arr[:i] {
			if f.s == e.s {
				ps.add(index(loc.String(), i), "required lists %s twice", quote(e.s))
				return false
			}
		}
	}
	return true
}

// countKeyword reads a non-negative integer keyword value.
func countKeyword(v value, loc *location, ps *problems) int {
	if v.kind == kindNumber && len(v.s) <= 18 && strings.Trim(v.s, "0123456789") == "" {
		n, _ := strconv.Atoi(v.s) // a plain non-negative integer token
		return n
	}
	if v.kind != kindNumber || !isInteger(v.s, !strings.ContainsAny(v.s, ".eE")) || exact(v.s).Sign() < 0 {
		ps.add(loc.String(), "must be a non-negative integer")
		return -1
	}
	if n := exact(v.s).Num(); n.IsInt64() && n.Int64() <= math.MaxInt {
		return int(n.Int64())
	}
	return math.MaxInt
}

func numberKeyword(v value, loc *location, ps *problems) *bound {
	if v.kind != kindNumber {
		ps.add(loc.String(), "must be a number")
		return nil
	}
	b := &bound{text: v.s}
	if i, err := strconv.ParseInt(v.s, 10, 64); err == nil && len(v.s) <= 18 {
		b.i64, b.isI64 = i, true // a plain integer token: no exact value needed
		return b
	}
	b.rat = exact(v.s)
	if b.rat.IsInt() && b.rat.Num().IsInt64() {
		b.i64, b.isI64 = b.rat.Num().Int64(), true
	}
	return b
}

// exact is the bound's exact value.
func (b *bound) exact() *big.Rat {
	if b.rat == nil {
		return new(big.Rat).SetInt64(b.i64)
	}
	return b.rat
}

// ---- validation straight from bytes ----

// validateBytes checks that data is one strict JSON document within lim that
// s accepts, in one pass and without building a tree. root names the
// document in error locations.
func (s *schema) validateBytes(data []byte, lim limits, root string) error {
	sc, err := newScanner(data, lim)
	if err == nil {
		err = sc.validate(s, root)
	}
	if err == nil {
		err = sc.finish()
	}
	if e, ok := err.(*syntaxError); ok {
		return e.at(root)
	}
	return err
}

// here stands for the location of the value being validated until the
// caller, on failure only, puts the real location in its place.
const here = "\x00"

// validate reads one value and checks it against s (nil accepts anything).
func (sc *scanner) validate(s *schema, loc string) error {
	if err := sc.count(); err != nil {
		return err
	}
	c := sc.peek()
	start := sc.pos
	var err error
	got := typeNumber
	switch c {
	case '{':
		got, err = typeObject, sc.validateObject(s, loc)
	case '[':
		got, err = typeArray, sc.validateArray(s, loc)
	case '"':
		got, err = typeString, sc.validateString(s, loc)
	case 't', 'f', 'n':
		var k kind
		k, _, err = sc.literal()
		got = typeBoolean
		if k == kindNull {
			got = typeNull
		}
		if err == nil && s != nil {
			err = s.checkType(got, loc)
		}
	case 0:
		if sc.pos == len(sc.data) {
			return sc.errorf("unexpected end of input")
		}
		return sc.errorf("invalid value")
	default:
		err = sc.validateNumber(s, loc)
	}
	if err != nil || s == nil || (!s.hasEnum && s.constant == nil) || got == typeString {
		return err // checkString compared a string with enum and const
	}
	return s.checkEnum(sc.data[start:sc.pos], loc)
}

// checkEnum compares a value that is not a string with const and enum. It
// stays out of validate, whose stack frame every nesting level pays for.
func (s *schema) checkEnum(data []byte, loc string) error {
	v := build(data)
	if s.constant != nil && !equal(v, *s.constant) {
		return &problem{Location: loc, Message: "value does not equal the schema's const"}
	}
	if s.hasEnum && !slices.ContainsFunc(s.enum, func(e value) bool { return equal(v, e) }) {
		return &problem{Location: loc, Message: "value is not one of the schema's enum values"}
	}
	return nil
}

func (s *schema) checkType(got typeMask, loc string) error {
	switch {
	case s.never:
		return &problem{Location: loc, Message: "no value is allowed here"}
	case s.types == 0 || s.types&got != 0:
		return nil
	}
	return &problem{Location: loc, Message: fmt.Sprintf("expected %s, got %s", s.types, got)}
}

func (t typeMask) String() string {
	var names []string
	for _, n := range [...]string{"null", "boolean", "integer", "number", "string", "array", "object"} {
		if t&typeNames[n] != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, " or ")
}

// relocate puts loc in place of here in a problem found below a member or
// element.
func relocate(err error, loc string) error {
	switch e := err.(type) {
	case *problem:
		e.Location = relocated(e.Location, loc)
	case *syntaxError:
		e.loc = relocated(e.loc, loc)
	}
	return err
}

func relocated(at, loc string) string {
	if strings.HasPrefix(at, here) {
		return loc + at[len(here):]
	}
	return at
}

// keySet finds duplicate keys: declared properties by index in a bit set,
// other keys in a byteSet.
type keySet struct {
	props  uint64
	many   []bool
	others byteSet
}

func (k *keySet) addProp(i, n int) bool {
	if i < 64 {
		dup := k.props&(1<<i) != 0
		k.props |= 1 << i
		return dup
	}
	if k.many == nil {
		k.many = make([]bool, n)
	}
	dup := k.many[i]
	k.many[i] = true
	return dup
}

func (k *keySet) hasProp(i int) bool {
	return i < 64 && k.props&(1<<i) != 0 || i >= 64 && k.many != nil && k.many[i]
}

// byteSet is a set of byte strings that is searched in place while it is
// small and becomes a map when it grows, so that n additions cost O(n).
type byteSet struct {
	small [16][]byte
	n     int
	set   map[string]bool
}

// add inserts b and reports whether it was already there.
func (u *byteSet) add(b []byte) bool {
	if u.set == nil && u.n < len(u.small) {
		for _, o := range u.small[:u.n] {
			if bytes.Equal(o, b) {
				return true
			}
		}
		u.small[u.n] = b
		u.n++
		return false
	}
	if u.set == nil {
		u.set = make(map[string]bool, 64)
		for _, o := range u.small[:u.n] {
			u.set[string(o)] = true
		}
	}
	if u.set[string(b)] {
		return true
	}
	u.set[string(b)] = true
	return false
}

func (sc *scanner) validateObject(s *schema, loc string) error {
	if s != nil {
		if err := s.checkType(typeObject, loc); err != nil {
			return err
		}
	}
	if err := sc.open(); err != nil {
		return err
	}
	sized := sc.recordSize()
	var seen keySet
	n := 0
	for first := true; ; first = false {
		more, err := sc.more('}', first)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		at := sc.pos
		sc.memberCount++
		if sc.peek() != '"' {
			return sc.errorf("expected a string key")
		}
		raw, esc, ascii, err := sc.str()
		if err != nil {
			return err
		}
		if sc.peek() != ':' {
			return sc.errorf("expected ':' after object key")
		}
		sc.pos++
		n++
		if esc {
			raw = []byte(sc.unescape(raw)) // the scratch buffer is reused below
		}
		idx, known := -1, false
		if s != nil {
			idx, known = s.propIndex[string(raw)]
		}
		var dup bool
		if known {
			dup = seen.addProp(idx, len(s.props))
		} else {
			dup = seen.others.add(raw)
		}
		if dup {
			sc.pos = at
			return sc.errorf("duplicate key %s", quote(string(raw)))
		}
		if s == nil {
			if err := sc.validate(nil, here); err != nil {
				return relocate(err, child(loc, string(raw)))
			}
			continue
		}
		if s.propertyNames != nil {
			if err := s.propertyNames.checkString(raw, ascii && !esc, here); err != nil {
				err.(*problem).Message = "property name " + err.(*problem).Message
				return relocate(err, child(loc, string(raw)))
			}
		}
		sub := s.additional
		if known && s.props[idx].declared {
			sub = s.props[idx].schema
		}
		if sub != nil && sub.never {
			return &problem{Location: child(loc, string(raw)), Message: "property is not allowed"}
		}
		if err := sc.validate(sub, here); err != nil {
			return relocate(err, child(loc, string(raw)))
		}
	}
	sc.setSize(sized, n)
	if s == nil {
		return nil
	}
	for _, i := range s.required {
		if !seen.hasProp(i) {
			return &problem{Location: loc, Message: fmt.Sprintf("missing required property %s", quote(s.props[i].name))}
		}
	}
	return checkCount(loc, "has %d properties", n, s.minProps, s.maxProps, "Properties")
}

// checkCount applies a min/max pair (-1 for unset) to a count; measured and
// keyword render the message, built only on failure.
func checkCount(loc, measured string, n, least, most int, keyword string) error {
	switch {
	case least >= 0 && n < least:
		return &problem{Location: loc, Message: fmt.Sprintf(measured+", fewer than min%s %d", n, keyword, least)}
	case most >= 0 && n > most:
		return &problem{Location: loc, Message: fmt.Sprintf(measured+", more than max%s %d", n, keyword, most)}
	}
	return nil
}

func (sc *scanner) validateArray(s *schema, loc string) error {
	if s != nil {
		if err := s.checkType(typeArray, loc); err != nil {
			return err
		}
	}
	if err := sc.open(); err != nil {
		return err
	}
	sized := sc.recordSize()
	var items *schema
	if s != nil {
		items = s.items
	}
	var seen byteSet
	n := 0
	for first := true; ; first = false {
		more, err := sc.more(']', first)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		start := sc.pos
		if items != nil && items.never {
			return &problem{Location: index(loc, n), Message: "no item is allowed here"}
		}
		if err := sc.validate(items, here); err != nil {
			return relocate(err, index(loc, n))
		}
		if s != nil && s.unique && seen.add(uniqueKey(sc.data[start:sc.pos])) {
			return &problem{Location: index(loc, n), Message: "equals an earlier item; uniqueItems requires distinct items"}
		}
		n++
	}
	sc.setSize(sized, n)
	if s == nil {
		return nil
	}
	return checkCount(loc, "has %d items", n, s.minItems, s.maxItems, "Items")
}

// uniqueKey renders a checked scalar token so that equal values of its type
// render equally; uniqueItems allows only one scalar item type.
func uniqueKey(tok []byte) []byte {
	switch {
	case tok[0] == '"' && bytes.IndexByte(tok, '\\') < 0:
		return tok[1 : len(tok)-1]
	case tok[0] == '"':
		return []byte(build(tok).s)
	case tok[0] == 't' || tok[0] == 'f' || tok[0] == 'n':
		return tok
	case bytes.ContainsAny(tok, ".eE") || string(tok) == "-0":
		return []byte(exact(string(tok)).RatString()) // 7.0 → "7", like the token 7
	}
	return tok
}

func (sc *scanner) validateString(s *schema, loc string) error {
	raw, esc, ascii, err := sc.str()
	if err != nil || s == nil {
		return err
	}
	if esc {
		raw = sc.unescapeBytes(raw)
	}
	return s.checkString(raw, ascii && !esc, loc)
}

// checkString validates a string instance given its decoded bytes.
func (s *schema) checkString(b []byte, ascii bool, loc string) error {
	if err := s.checkType(typeString, loc); err != nil {
		return err
	}
	if s.minLength >= 0 || s.maxLength >= 0 {
		n := len(b)
		if !ascii {
			n = utf8.RuneCount(b)
		}
		if err := checkCount(loc, "is %d characters", n, s.minLength, s.maxLength, "Length"); err != nil {
			return err
		}
	}
	if s.dateTime {
		if err := checkDateTime(b); err != nil {
			return &problem{Location: loc, Message: fmt.Sprintf("%s is not an RFC 3339 date-time: %v", quote(string(b)), err)}
		}
	}
	if s.hasEnum || s.constant != nil {
		if s.constant != nil && (s.constant.kind != kindString || s.constant.s != string(b)) {
			return &problem{Location: loc, Message: "value does not equal the schema's const"}
		}
		if s.hasEnum && !slices.ContainsFunc(s.enum, func(e value) bool { return e.kind == kindString && e.s == string(b) }) {
			return &problem{Location: loc, Message: fmt.Sprintf("%s is not one of the schema's enum values", quote(string(b)))}
		}
	}
	return nil
}

func (sc *scanner) validateNumber(s *schema, loc string) error {
	tok, plain, err := sc.number()
	if err != nil || s == nil {
		return err
	}
	got := typeNumber
	if s.types&typeInteger != 0 && s.types&typeNumber == 0 && (plain || isInteger(string(tok), false)) {
		got = typeInteger
	}
	if err := s.checkType(got, loc); err != nil {
		return err
	}
	if s.minimum == nil && s.maximum == nil && s.exclMin == nil && s.exclMax == nil && s.multipleOf == nil {
		return nil
	}
	n := num{small: plain && len(tok) <= 18 && s.int64Bounds()}
	if n.small {
		n.i, _ = strconv.ParseInt(string(tok), 10, 64)
	} else {
		n.r = exact(string(tok))
	}
	var what string
	var b *bound
	switch {
	case s.minimum != nil && n.cmp(s.minimum) < 0:
		what, b = "less than minimum", s.minimum
	case s.maximum != nil && n.cmp(s.maximum) > 0:
		what, b = "greater than maximum", s.maximum
	case s.exclMin != nil && n.cmp(s.exclMin) <= 0:
		what, b = "not greater than exclusiveMinimum", s.exclMin
	case s.exclMax != nil && n.cmp(s.exclMax) >= 0:
		what, b = "not less than exclusiveMaximum", s.exclMax
	case s.multipleOf != nil && !n.multipleOf(s.multipleOf):
		what, b = "not a multiple of", s.multipleOf
	default:
		return nil
	}
	t := string(tok)
	if len(t) > 40 {
		t = t[:40] + "…"
	}
	return &problem{Location: loc, Message: fmt.Sprintf("%s is %s %s", t, what, b.text)}
}

// num is an instance number: an int64 when every bound is one too, else exact.
type num struct {
	small bool
	i     int64
	r     *big.Rat
}

func (n num) cmp(b *bound) int {
	if n.small {
		return cmp.Compare(n.i, b.i64)
	}
	return n.r.Cmp(b.exact())
}

func (n num) multipleOf(b *bound) bool {
	if n.small {
		return n.i%b.i64 == 0
	}
	return new(big.Rat).Quo(n.r, b.exact()).IsInt()
}

// int64Bounds reports whether every numeric keyword of s is an int64, so a
// short integer token can be checked without exact decimals.
func (s *schema) int64Bounds() bool {
	for _, b := range [...]*bound{s.minimum, s.maximum, s.exclMin, s.exclMax, s.multipleOf} {
		if b != nil && !b.isI64 {
			return false
		}
	}
	return true
}

// ---- text helpers ----

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

// hasControl reports whether s holds an ASCII control character.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
