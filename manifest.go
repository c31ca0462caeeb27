package main

import (
	"bytes"
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Manifest limits and name rules (SPEC §4).
const (
	manifestToolLimit = 64
	titleLimit        = 200
	descriptionLimit  = 2000
	pathLimit         = 1024
)

var (
	slugPattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	toolNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
)

// manifest is a bridge-v1 manifest that passed every rule.
type manifest struct {
	plugin string
	tools  []*tool
}

// tool is one validated descriptor with its compiled schemas.
type tool struct {
	name, title, method, path, effect string
	summary                           string  // the description's first sentence, for the catalog index
	descriptor                        []byte  // compact, as in the manifest, outputSchema null when absent
	input                             *schema // root of inputSchema
	output                            *schema // nil when absent
}

// withoutSchemas is a copy of m whose tools have no compiled schemas, which
// can cost many times their text: what a full scan lists (descriptors
// only). Such tools are never dispatched, for a nil schema accepts
// anything: a call discovers its plugin again, with its schemas.
func (m *manifest) withoutSchemas() *manifest {
	light := &manifest{plugin: m.plugin}
	for _, t := range m.tools {
		copied := *t
		copied.input, copied.output = nil, nil
		light.tools = append(light.tools, &copied)
	}
	return light
}

func (m *manifest) tool(name string) *tool {
	if i := slices.IndexFunc(m.tools, func(t *tool) bool { return t.name == name }); i >= 0 {
		return m.tools[i]
	}
	return nil
}

var (
	manifestKeys   = []string{"schema_version", "plugin", "tools"}
	descriptorKeys = []string{"name", "title", "description", "method", "path", "effect", "inputSchema", "annotations"}
	annotationKeys = []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
	effectNames    = []string{"read", "write", "destructive"}
	methodEffects  = map[string][]string{"GET": {"read"}, "HEAD": {"read"}, "POST": {"write", "destructive"}, "PUT": {"write", "destructive"}, "PATCH": {"write", "destructive"}, "DELETE": {"destructive"}}
	keyAliases     = map[string]string{"input_schema": "inputSchema", "output_schema": "outputSchema", "read_only_hint": "readOnlyHint"}
)

// parseManifest decodes a manifest document and checks every rule of SPEC
// §4 and §5. Each rule is checked on its own, so that one run reports every
// problem, each with its line and column (for the capped list printers
// show). It returns the manifest only when there is no problem.
func parseManifest(data []byte) (*manifest, problems) {
	var ps problems
	doc, err := decode(data, manifestLimits)
	if err != nil {
		ps.addErr(err)
		return nil, ps
	}
	m := &manifest{}
	ps.exactKeys(doc, "", "the manifest", manifestKeys)
	if v, found := doc.get("schema_version"); found && (v.kind != kindString || v.s != "1") {
		ps.add("schema_version", `must be the string "1"`)
	}
	if v, found := doc.get("plugin"); found && (v.kind != kindString || !slugPattern.MatchString(v.s)) {
		ps.add("plugin", "must be a plugin slug: 1 to 64 lower-case letters, digits, - and _, the first a letter or a digit%s", fixName(v, slugPattern, '-'))
	} else {
		m.plugin = strings.Clone(v.s)
	}
	tools, found := doc.get("tools")
	if found && (tools.kind != kindArray || len(tools.arr) < 1 || len(tools.arr) > manifestToolLimit) {
		ps.add("tools", "must be an array of 1 to %d tools", manifestToolLimit)
	}
	names := map[string]int{}
	scratch := make([]byte, 0, min(len(data), 8<<10)) // most descriptors fit
	for i, tv := range tools.arr {
		loc := index("tools", i)
		before := len(ps)
		if t := ps.checkDescriptor(tv, loc, &scratch); t != nil {
			m.tools = append(m.tools, t)
		}
		name, _ := tv.get("name")
		if j, dup := names[name.s]; dup && name.kind == kindString {
			ps.add(child(loc, "name"), "tool name %s is already used by tools[%d]", quote(name.s), j)
		} else if name.kind == kindString {
			names[name.s] = i
		}
		for j := before; j < len(ps) && name.kind == kindString; j++ {
			ps[j].Tool = clip(name.s, clipLimit) // beside the index, for authors
		}
	}
	if len(ps) > 0 { // in the file's order, the first ones (what printers show) with their line and column
		for i := range ps {
			ps[i].offset = int(doc.find(ps[i].Location).offset)
		}
		slices.SortStableFunc(ps, func(a, b problem) int { return cmp.Compare(a.offset, b.offset) })
		for i := range ps[:min(len(ps), problemLimit)] {
			ps[i].Line, ps[i].Column = lineColumn(data, ps[i].offset)
		}
		return nil, ps
	}
	return m, nil
}

// exactKeys checks that obj, found at loc, is an object with the required
// keys and no other key but the optional ones. A key missing under its
// snake-case alias is reported once, as the alias.
func (ps *problems) exactKeys(obj value, loc, what string, required []string, optional ...string) {
	if obj.kind != kindObject {
		ps.add(loc, "%s must be an object", what)
		return
	}
	for _, m := range obj.obj {
		switch a, alias := keyAliases[m.key]; { // no alias is a key of the bridge
		case alias:
			ps.add(child(loc, m.key), "unknown key in %s (the key is %q)", what, a)
		case !slices.Contains(required, m.key) && !slices.Contains(optional, m.key):
			ps.add(child(loc, m.key), "unknown key in %s", what)
		}
	}
	for _, k := range required {
		if _, found := obj.get(k); !found && !slices.ContainsFunc(obj.obj, func(m member) bool { return keyAliases[m.key] == k }) {
			ps.add(loc, "%s is missing %q", what, k)
		}
	}
}

// checkDescriptor checks one tool descriptor, found at loc, and returns it
// compiled when it breaks no rule.
func (ps *problems) checkDescriptor(v value, loc string, scratch *[]byte) *tool {
	before := len(*ps)
	ps.exactKeys(v, loc, "a tool descriptor", descriptorKeys, "outputSchema")
	field := func(key string) (string, bool) { // a missing key is reported above
		f, found := v.get(key)
		if found && f.kind != kindString {
			ps.add(child(loc, key), "must be a string")
		}
		return f.s, f.kind == kindString
	}
	name, isName := field("name")
	if isName && !toolNamePattern.MatchString(name) {
		ps.add(child(loc, "name"), "%s is not a tool name: 1 to 64 lower-case letters, digits and _, the first a letter%s", quote(name), fixName(value{kind: kindString, s: name}, toolNamePattern, '_'))
	}
	title, isTitle := field("title")
	if n := utf8.RuneCountInString(title); isTitle && (n < 1 || n > titleLimit) {
		ps.add(child(loc, "title"), "must be 1 to %d characters, not %d", titleLimit, n)
	}
	description, isDescription := field("description")
	if n := utf8.RuneCountInString(description); isDescription && (n < 1 || n > descriptionLimit) {
		ps.add(child(loc, "description"), "must be 1 to %d characters, not %d", descriptionLimit, n)
	}
	path, isPath := field("path")
	if err := checkToolPath(path); isPath && err != nil {
		ps.add(child(loc, "path"), "%s: %v", quote(path), err)
	}
	method, isMethod := field("method")
	effects, knownMethod := methodEffects[strings.ToUpper(method)]
	switch {
	case isMethod && knownMethod && method != strings.ToUpper(method):
		ps.add(child(loc, "method"), "%s must be upper case: %s", quote(method), strings.ToUpper(method))
	case isMethod && !knownMethod:
		ps.add(child(loc, "method"), "%s is not one of GET, HEAD, POST, PUT, PATCH, DELETE", quote(method))
	}
	method = strings.ToUpper(method) // the rules that depend on it read the method it must be
	effect, isEffect := field("effect")
	knownEffect := slices.Contains(effectNames, effect)
	switch {
	case isEffect && !knownEffect:
		ps.add(child(loc, "effect"), "%s is not one of read, write, destructive", quote(effect))
	case knownMethod && knownEffect && !slices.Contains(effects, effect):
		ps.add(child(loc, "effect"), "%s does not agree with method %s, which needs %s", quote(effect), method, strings.Join(effects, " or "))
	}
	if a, found := v.get("annotations"); found { // the hints that follow the effect only when it is known
		at := child(loc, "annotations")
		ps.exactKeys(a, at, "annotations", annotationKeys)
		for _, k := range annotationKeys {
			if h, found := a.get(k); found && h.kind != kindBool {
				ps.add(child(at, k), "must be a boolean")
			}
		}
		for _, f := range [...]struct{ hint, effect string }{{"readOnlyHint", "read"}, {"destructiveHint", "destructive"}} {
			if h, _ := a.get(f.hint); h.kind == kindBool && h.b != (effect == f.effect) && knownEffect {
				ps.add(child(at, f.hint), "must be %t for effect %q", effect == f.effect, effect)
			}
		}
	}
	var input, output *schema
	if in, found := v.get("inputSchema"); found {
		input = ps.checkInputSchema(in, child(loc, "inputSchema"), method)
	}
	if out, _ := v.get("outputSchema"); out.kind != kindNull {
		output = compileSchema(out, child(loc, "outputSchema"), ps)
	}
	if len(*ps) > before {
		return nil
	}
	// The tool outlives the manifest's tree: it keeps copies.
	return &tool{name: strings.Clone(name), title: strings.Clone(title), method: strings.Clone(method), path: strings.Clone(path),
		effect: strings.Clone(effect), summary: firstSentence(description), descriptor: encodeDescriptor(v, scratch), input: input, output: output}
}

// fixName is, for a name v that breaks pattern, "; try NAME" with the
// nearest name that does not (lower case, other characters as sep), or ""
// when there is none.
func fixName(v value, pattern *regexp.Regexp, sep rune) string {
	fixed := strings.Trim(strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && (isAlnum(byte(r)) || r == sep || r == '_') {
			return unicode.ToLower(r)
		}
		return sep
	}, v.s), "-_")
	if fixed = fixed[:min(len(fixed), 64)]; v.kind != kindString || !pattern.MatchString(fixed) {
		return ""
	}
	return fmt.Sprintf("; try %q", fixed)
}

// summaryLimit bounds a summary in the catalog index (SPEC §9).
const summaryLimit = 160

// firstSentence is a description's first sentence, its white space made
// single spaces, clipped to summaryLimit characters.
func firstSentence(d string) string {
	for i := 0; i < len(d); i++ {
		if strings.IndexByte(".!?", d[i]) >= 0 && (i+1 == len(d) || d[i+1] == ' ' || d[i+1] == '\n') {
			d = d[:i+1]
			break
		}
	}
	if strings.Contains(d, "  ") || strings.ContainsFunc(d, func(r rune) bool { return r != ' ' && unicode.IsSpace(r) }) || strings.TrimSpace(d) != d {
		d = strings.Join(strings.Fields(d), " ")
	}
	return clipRunes(d, summaryLimit)
}

// clipRunes shortens s to at most n characters, the last of them "…".
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// encodeDescriptor is the compact encoding of a valid descriptor, with
// "outputSchema": null added when it has none. It is encoded in scratch,
// which a manifest's tools share, and copied out at its size.
func encodeDescriptor(v value, scratch *[]byte) []byte {
	b := appendJSON((*scratch)[:0], v)
	if _, found := v.get("outputSchema"); !found {
		b = append(append(b[:len(b)-1], `,"outputSchema":null`...), '}')
	}
	*scratch = b
	return bytes.Clone(b)
}

// checkInputSchema compiles the inputSchema v, found at loc, with its root
// rules, and for GET/HEAD the rule that every property encodes as a query
// parameter, which it checks even where the schema breaks other rules.
func (ps *problems) checkInputSchema(v value, loc, method string) *schema {
	if v.kind != kindObject {
		ps.add(loc, "must be a schema object")
		return nil
	}
	if t, _ := v.get("type"); t.kind != kindString || t.s != "object" {
		ps.add(child(loc, "type"), `an inputSchema root must declare "type": "object"`)
	}
	if a, _ := v.get("additionalProperties"); a.kind != kindBool || a.b {
		ps.add(child(loc, "additionalProperties"), `an inputSchema root must declare "additionalProperties": false`)
	}
	s := compilePartial(v, loc, ps)
	if s == nil || method != "GET" && method != "HEAD" {
		return s
	}
	scalar := func(s *schema) bool { return s != nil && s.types != 0 && s.types&^scalarTypes == 0 }
	for _, p := range s.props { // each value p accepts must encode deterministically as query parameters
		if p.declared && p.schema != nil && !scalar(p.schema) && (p.schema.types&^typeNull != typeArray || !scalar(p.schema.items)) {
			ps.add(child(child(loc, "properties"), p.name),
				"a %s input property must declare scalar types, or \"array\" (optionally with \"null\") whose items declare scalar types", method)
		}
	}
	return s
}

// checkToolPath applies the descriptor path rules: a fixed path relative to
// the plugin's API root.
func checkToolPath(p string) error {
	notAllowed := strings.IndexFunc(p, func(r rune) bool { return r >= utf8.RuneSelf || !isAlnum(byte(r)) && !strings.ContainsRune("._~/-", r) })
	switch {
	case len(p) < 2 || len(p) > pathLimit:
		return fmt.Errorf("must be 2 to %d characters", pathLimit)
	case notAllowed >= 0:
		r, _ := utf8.DecodeRuneInString(p[notAllowed:])
		return fmt.Errorf("character %q is not allowed (only A-Z a-z 0-9 . _ ~ / -)", r)
	case p[0] == '/':
		return fmt.Errorf("must be relative to /api/plugins/<plugin>/, without a leading /")
	case p[len(p)-1] != '/':
		return fmt.Errorf("must end with /")
	case badSegment(p[:len(p)-1]):
		return fmt.Errorf("has an empty, . or .. segment")
	}
	return nil
}
