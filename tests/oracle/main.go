// Command celoracle answers what Kubernetes' own CEL says of an expression: it compiles and evaluates
// with k8s.io/apiserver's CEL environment at the version pinned in go.mod (the base environment set at
// the API server's default compatibility version, with the libraries that version enables), the
// admission variables declared as the ValidatingAdmissionPolicy and MutatingAdmissionPolicy plugins
// declare them, and `variables` composed as those plugins compose them.
//
// Test tooling only: tests/oracle/build builds it, tests/oracle/client.py drives it. One JSON request
// per line on standard input, one JSON answer per line on standard output (see request and answer).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// request is one line of input. Env: "validating" (ValidatingAdmissionPolicy validations) or "mutating"
// (MutatingAdmissionPolicy mutations: patch types declared). Mode: "stored" (default: what the API
// server keeps evaluating once stored) or "new" (what it admits in a new or changed policy).
type request struct {
	ID         any                        `json:"id"`
	Expression string                     `json:"expression"`
	Env        string                     `json:"env"`
	Mode       string                     `json:"mode"`
	Variables  []variable                 `json:"variables"`
	Bindings   map[string]json.RawMessage `json:"bindings"`
}

type variable struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

// answer is one line of output: a value with its CEL type, or an error of kind "compile", "runtime"
// or "request" (the line itself could not be read).
type answer struct {
	ID      any    `json:"id"`
	Value   *typed `json:"value,omitempty"`
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
}

type accessor struct{ name, expression string }

func (a accessor) GetExpression() string    { return a.expression }
func (a accessor) ReturnTypes() []*cel.Type { return []*cel.Type{cel.AnyType} }
func (a accessor) GetName() string          { return a.name }

type compiled struct {
	result plugincel.CompilationResult
	env    *plugincel.CompositionEnv
}

type oracle struct {
	validating, mutating *environment.EnvSet
	cache                map[string]compiled
}

func newOracle() *oracle {
	base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion(), true)
	return &oracle{validating: base, mutating: base, cache: map[string]compiled{}}
}

func (o *oracle) compile(req *request) (compiled, error) {
	key, _ := json.Marshal([]any{req.Env, req.Mode, req.Variables, req.Expression})
	if found, ok := o.cache[string(key)]; ok {
		return found, nil
	}
	opts := plugincel.OptionalVariableDeclarations{HasParams: true, HasAuthorizer: true, StrictCost: true}
	switch req.Env {
	case "", "validating":
	case "mutating":
		opts.HasPatchTypes = true
	default:
		return compiled{}, fmt.Errorf("unknown env %q: expected validating or mutating", req.Env)
	}
	mode := environment.StoredExpressions
	switch req.Mode {
	case "", "stored":
	case "new":
		mode = environment.NewExpressions
	default:
		return compiled{}, fmt.Errorf("unknown mode %q: expected stored or new", req.Mode)
	}
	compiler, err := plugincel.NewCompositedCompiler(o.validating)
	if err != nil {
		return compiled{}, err
	}
	for _, v := range req.Variables {
		compiler.CompileAndStoreVariable(accessor{v.Name, v.Expression}, opts, mode)
	}
	// with HasPatchTypes the compiler's environment declares Object{...} and JSONPatch{...}, as for MAP mutations
	result := compiler.Compiler.CompileCELExpression(accessor{"", req.Expression}, opts, mode)
	found := compiled{result, compiler.CompositionEnv}
	if len(o.cache) > 50000 {
		o.cache = map[string]compiled{}
	}
	o.cache[string(key)] = found
	return found, nil
}

// activation resolves the admission variables as the plugins' activation does: every declared name
// resolves (absent ones as null), `variables` lazily through the composition.
type activation struct {
	values    map[string]any
	variables ref.Val
}

func (a *activation) ResolveName(name string) (any, bool) {
	if name == "variables" {
		return a.variables, true
	}
	switch name {
	case "object", "oldObject", "params", "request", "namespaceObject":
		value, ok := a.values[name]
		if !ok {
			return nil, true
		}
		return value, true
	}
	value, ok := a.values[name]
	return value, ok
}

func (a *activation) Parent() interpreter.Activation { return nil }

func decode(raw json.RawMessage) (any, error) {
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.UseNumber()
	var value any
	if err := decoder.Decode(&value); err != nil {
		return nil, err
	}
	return unstructured(value), nil
}

// unstructured converts numbers as Kubernetes' unstructured JSON does: int64 where the text is an
// integer that fits, float64 otherwise.
func unstructured(value any) any {
	switch v := value.(type) {
	case map[string]any:
		for key, item := range v {
			v[key] = unstructured(item)
		}
		return v
	case []any:
		for i, item := range v {
			v[i] = unstructured(item)
		}
		return v
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	}
	return value
}

func (o *oracle) answer(line []byte) answer {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return answer{Error: "request", Message: err.Error()}
	}
	out := answer{ID: req.ID}
	found, err := o.compile(&req)
	if err != nil {
		out.Error, out.Message = "request", err.Error()
		return out
	}
	if found.result.Error != nil {
		out.Error, out.Message = "compile", found.result.Error.Error()
		return out
	}
	// a variable that does not compile is an error only where it is read, as in the plugins
	values := map[string]any{}
	for name, raw := range req.Bindings {
		value, err := decode(raw)
		if err != nil {
			out.Error, out.Message = "request", fmt.Sprintf("binding %s: %v", name, err)
			return out
		}
		values[name] = value
	}
	ctx := found.env.CreateContext(context.Background())
	act := &activation{values: values}
	act.variables = ctx.Variables(act)
	value, _, err := found.result.Program.ContextEval(ctx, act)
	if err != nil {
		out.Error, out.Message = "runtime", err.Error()
		return out
	}
	encoded, err := encode(value)
	if err != nil {
		out.Error, out.Message = "runtime", err.Error()
		return out
	}
	out.Value = encoded
	return out
}

func main() {
	o := newOracle()
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	writer := bufio.NewWriter(os.Stdout)
	encoder := json.NewEncoder(writer)
	encoder.SetEscapeHTML(false)
	for scanner.Scan() {
		line := bytes.TrimSpace(scanner.Bytes())
		if len(line) == 0 {
			continue
		}
		if strings.HasPrefix(string(line), `{"info"`) {
			_ = encoder.Encode(map[string]string{"compatibilityVersion": environment.DefaultCompatibilityVersion().String()})
		} else {
			_ = encoder.Encode(o.answer(line))
		}
		_ = writer.Flush()
	}
	if err := scanner.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "celoracle:", err)
		os.Exit(1)
	}
}
