// The Go runner's driver: compiled with an item's candidates into one binary, which serves
// their suites.
//
// Started by the Go runner's zygote (_runner.py), confined before exec (namespaces, nobody,
// no_new_privs, Landlock, the exec'd-runner seccomp program, rlimits), with an empty
// environment and the Node runner's fds and frames: 3 run frames from the zygote ({"calls":
// [[kind, entry point, arguments as JSON text] or null, ...]}); 4 frames to the checker
// ({"m": outcome}, {"e": test, "r": answer} per call, {"d": 1}); 5 one byte "r" once ready,
// then "d" after the suite; 1 and 2 the suite's output. A frame is a 4-byte big-endian length
// and UTF-8 JSON. The checker decides every verdict: this file never sees an expected value.
//
// The binary holds every candidate of one item that compiles, each a package of its own with a
// generated table of the entry points the calls name (a candidate that lacks one does not
// compile); the zygote generates execretrieval_tables, one table per candidate, and each run
// frame names its candidate ({"candidate": k, "calls": [...]}). A value crosses as the wire's
// tagged JSON (_wire.decode): ints (["i", hex] beyond 2**60), floats ["f", hex], strings, bools,
// nil as null, slices ["l", ...], arrays and several results ["t", ...], maps ["d", k, v, ...],
// maps to struct{} ["s", ...], pointers as what they point to, *big.Int as an int. Anything
// else is {"u": why}. A panic is {"x": "panic"}, except a runtime error (an index out of range,
// a nil map write, a division by zero): {"x": "runtime_error"}, which raises(panic) does not
// match, as a Python IndexError does not match raises(ValueError).
package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/big"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
)

const (
	execretrieval_maxRun      = 64 << 20
	execretrieval_maxDepth    = 200
	execretrieval_maxElements = 1 << 20
	execretrieval_maxText     = 12 << 20
)

type execretrieval_fail string

type execretrieval_encoder struct {
	out      strings.Builder
	elements int
}

func (e *execretrieval_encoder) put(s string) {
	if e.out.Len()+len(s) > execretrieval_maxText {
		panic(execretrieval_fail("a value longer than " + strconv.Itoa(execretrieval_maxText) + " bytes encoded"))
	}
	e.out.WriteString(s)
}

var execretrieval_bigType = reflect.TypeOf((*big.Int)(nil))

func (e *execretrieval_encoder) int(text string, fits bool) {
	if fits {
		e.put(text)
		return
	}
	n, _ := new(big.Int).SetString(text, 10)
	e.put(`["i","` + n.Text(16) + `"]`)
}

func (e *execretrieval_encoder) enc(v reflect.Value, depth int) {
	if depth > execretrieval_maxDepth {
		panic(execretrieval_fail("a value nested deeper than " + strconv.Itoa(execretrieval_maxDepth) + " levels"))
	}
	e.elements--
	if e.elements < 0 {
		panic(execretrieval_fail("a value of more than " + strconv.Itoa(execretrieval_maxElements) + " elements"))
	}
	if !v.IsValid() {
		e.put("null")
		return
	}
	if v.Type() == execretrieval_bigType {
		if v.IsNil() {
			e.put("null")
			return
		}
		n := v.Interface().(*big.Int)
		e.int(n.String(), n.IsInt64() && n.Int64() > -(1<<60) && n.Int64() < 1<<60)
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			e.put("true")
		} else {
			e.put("false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := v.Int()
		e.int(strconv.FormatInt(n, 10), n > -(1<<60) && n < 1<<60)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n := v.Uint()
		e.int(strconv.FormatUint(n, 10), n < 1<<60)
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		switch {
		case math.IsNaN(f):
			e.put(`["f","nan"]`)
		case math.IsInf(f, 1):
			e.put(`["f","inf"]`)
		case math.IsInf(f, -1):
			e.put(`["f","-inf"]`)
		default:
			e.put(`["f","` + strconv.FormatFloat(f, 'x', -1, 64) + `"]`)
		}
	case reflect.String:
		text, _ := json.Marshal(v.String()) // invalid UTF-8 becomes U+FFFD
		e.put(string(text))
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			e.put("null")
			return
		}
		e.enc(v.Elem(), depth+1)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice {
			e.put(`["l"`)
		} else {
			e.put(`["t"`)
		}
		for i := 0; i < v.Len(); i++ {
			e.put(",")
			e.enc(v.Index(i), depth+1)
		}
		e.put("]")
	case reflect.Map:
		set := v.Type().Elem().Kind() == reflect.Struct && v.Type().Elem().NumField() == 0
		if set {
			e.put(`["s"`)
		} else {
			e.put(`["d"`)
		}
		it := v.MapRange()
		for it.Next() {
			e.put(",")
			e.enc(it.Key(), depth+1)
			if !set {
				e.put(",")
				e.enc(it.Value(), depth+1)
			}
		}
		e.put("]")
	default:
		panic(execretrieval_fail("a value of type " + v.Type().String()))
	}
}

// execretrieval_encode is a call's results as an answer: the value, or a tuple of several.
func execretrieval_encode(results []reflect.Value) (answer string) {
	finished := false
	defer func() {
		if !finished {
			why, ok := recover().(execretrieval_fail)
			if !ok {
				why = "a value whose encoding failed"
			}
			text, _ := json.Marshal("go: " + string(why))
			answer = `{"u":` + string(text) + `}`
		}
	}()
	e := &execretrieval_encoder{elements: execretrieval_maxElements + 1}
	switch len(results) {
	case 0:
		e.put("null")
	case 1:
		e.enc(results[0], 0)
	default:
		e.put(`["t"`)
		for _, r := range results {
			e.put(",")
			e.enc(r, 1)
		}
		e.put("]")
	}
	answer = `{"v":` + e.out.String() + `}`
	finished = true
	return answer
}

const execretrieval_panic = `["builtins.panic"]`
const execretrieval_runtimeError = `["builtins.runtime_error"]`

// execretrieval_call runs one call; the answer, or the class chain of its panic (panic(nil)
// too: a flag, not recover's value, says whether the call returned).
func execretrieval_call(fn reflect.Value, argsText string, kind string) (answer string) {
	returned := false
	defer func() {
		if !returned {
			mro, name := execretrieval_panic, "panic"
			if _, ok := recover().(runtime.Error); ok {
				mro, name = execretrieval_runtimeError, "runtime_error"
			}
			if kind == "call" {
				answer = `{"ok":0,"mro":` + mro + `}`
			} else {
				answer = `{"x":"` + name + `","mro":` + mro + `}`
			}
		}
	}()
	args, problem := execretrieval_arguments(fn.Type(), argsText)
	if problem != "" {
		returned = true
		why, _ := json.Marshal(problem)
		return `{"x":"ArgumentError","mro":["go.ArgumentError"],"why":` + string(why) + `}`
	}
	results := fn.Call(args)
	returned = true
	if kind == "call" {
		return `{"ok":1}`
	}
	return execretrieval_encode(results)
}

// execretrieval_arguments decodes a call's JSON arguments into the entry point's parameters.
func execretrieval_arguments(t reflect.Type, argsText string) ([]reflect.Value, string) {
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(argsText), &raw); err != nil {
		return nil, "arguments that are not a JSON array"
	}
	if t.IsVariadic() || len(raw) != t.NumIn() {
		return nil, strconv.Itoa(len(raw)) + " arguments for " + strconv.Itoa(t.NumIn()) + " parameters"
	}
	args := make([]reflect.Value, len(raw))
	for i, text := range raw {
		p := reflect.New(t.In(i))
		if err := json.Unmarshal(text, p.Interface()); err != nil {
			return nil, "argument " + strconv.Itoa(i+1) + ": " + err.Error()
		}
		args[i] = p.Elem()
	}
	return args, ""
}

func execretrieval_readFrame(f *os.File) map[string]json.RawMessage {
	head := make([]byte, 4)
	if _, err := execretrieval_readFull(f, head); err != nil {
		return nil
	}
	size := binary.BigEndian.Uint32(head)
	if size > execretrieval_maxRun {
		os.Exit(70)
	}
	body := make([]byte, size)
	if _, err := execretrieval_readFull(f, body); err != nil {
		return nil
	}
	var frame map[string]json.RawMessage
	if json.Unmarshal(body, &frame) != nil {
		os.Exit(70)
	}
	return frame
}

func execretrieval_readFull(f *os.File, buf []byte) (int, error) {
	got := 0
	for got < len(buf) {
		n, err := f.Read(buf[got:])
		got += n
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

func execretrieval_send(f *os.File, text string) {
	frame := make([]byte, 4+len(text))
	binary.BigEndian.PutUint32(frame, uint32(len(text)))
	copy(frame[4:], text)
	if _, err := f.Write(frame); err != nil {
		os.Exit(70)
	}
}

func main() {
	run, reply, zygote := os.NewFile(3, "run"), os.NewFile(4, "reply"), os.NewFile(5, "zygote")
	zygote.Write([]byte("r"))
	for {
		frame := execretrieval_readFrame(run)
		if frame == nil {
			return
		}
		var calls []*[3]string
		var candidate int
		if json.Unmarshal(frame["calls"], &calls) != nil ||
			json.Unmarshal(frame["candidate"], &candidate) != nil ||
			candidate < 0 || candidate >= len(execretrieval_tables) {
			os.Exit(70)
		}
		table := execretrieval_tables[candidate]
		execretrieval_send(reply, `{"m":"pass"}`)
		for i, c := range calls {
			if c == nil {
				continue
			}
			var answer string
			if fn, ok := table[c[1]]; ok {
				answer = execretrieval_call(reflect.ValueOf(fn), c[2], c[0])
			} else {
				answer = `{"x":"CompileError","mro":["go.CompileError"]}`
			}
			execretrieval_send(reply, `{"e":`+strconv.Itoa(i)+`,"r":`+answer+`}`)
		}
		os.Stdout.Sync()
		execretrieval_send(reply, `{"d":1}`)
		zygote.Write([]byte("d"))
	}
}
