package main

import (
	"encoding/json"
)

// bridgeError is the one error type of discovery and dispatch: a SPEC §9
// code, a message that says what to do, and on which side of the write
// boundary the failure happened.
type bridgeError struct {
	Code       string          `json:"code"`
	Message    string          `json:"message"`
	Plugin     string          `json:"plugin,omitempty"`
	Tool       string          `json:"tool,omitempty"`
	Dispatched bool            `json:"dispatched"`
	Outcome    string          `json:"outcome,omitempty"`
	Status     int             `json:"status,omitempty"`
	Body       json.RawMessage `json:"body,omitempty"`
	cause      error
}

func (e *bridgeError) Error() string { return e.Message }

func stringValue(s string) value { return value{kind: kindString, s: s} }

// catalogDocument renders a catalog as the plugin_list_tools result (SPEC §9):
// each descriptor exactly as in its manifest, plus plugin, qualified_name and
// request_path.
func catalogDocument(cat *catalog) []byte {
	tools := value{kind: kindArray, arr: []value{}}
	for _, t := range cat.tools {
		d := t.tool.descriptor
		d.obj = append(d.obj[:len(d.obj):len(d.obj)], member{"plugin", stringValue(t.plugin)},
			member{"qualified_name", stringValue(t.qualifiedName())}, member{"request_path", stringValue(t.requestPath)})
		tools.arr = append(tools.arr, d)
	}
	problems := value{kind: kindArray, arr: []value{}}
	for _, p := range cat.problems {
		problems.arr = append(problems.arr, value{kind: kindObject, obj: []member{
			{"plugin", stringValue(p.Plugin)}, {"code", stringValue(p.Code)}, {"error", stringValue(p.Error)}}})
	}
	return encode(value{kind: kindObject, obj: []member{{"schema_version", stringValue("1")}, {"tools", tools}, {"problems", problems}}})
}
