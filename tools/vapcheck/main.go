// vapcheck judges admission requests with the ValidatingAdmissionPolicy plugin of k8s.io/apiserver, the code
// kube-apiserver runs, over fake clients instead of a cluster (../../../shared/tools/vapcheck/README.md of the
// workspace describes the approach).
//
//	vapcheck FILE      FILE holds {"policies","bindings","namespaces","requests":[...]}; prints
//	                   {"compileErrors":[{policy,error}],"results":[{id,allowed,messages,evalErrors}]}.
//	vapcheck --serve   first stdin line {"policies","bindings","namespaces"}, answered {"ready":true,
//	                   "compileErrors":[...]}; then one request per line, each answered by one result line.
//
// A request: {"id","operation","namespace","name","subResource","resource":{group,version,resource},
// "kind":{group,version,kind},"object","oldObject","userInfo":{"username","uid","groups","extra"},"dryRun"}.
// `name` defaults to the object's metadata.name, `kind` to the object's apiVersion and kind, `resource` to the
// kind's resource (kinds.go).
//
// A result: allowed (the plugin's Validate returned nil), messages (the message of every failing validation of
// every denying binding, by policy name, binding name, validation index), evalErrors (expression errors, cost
// budget, configuration errors: they deny under failurePolicy Fail), warnings (from the input's Warn bindings and
// unknown fields of the object), denial (the API server's error text, when denied), error (the request could not be
// built; file mode exits 2 instead).
//
// Exit status: 0; 1 the plugin could not start; 2 bad usage or input (one line on stderr).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

type gvrJSON struct {
	Group    string `json:"group"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
}

type gvkJSON struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

type userJSON struct {
	Username string              `json:"username"`
	UID      string              `json:"uid"`
	Groups   []string            `json:"groups"`
	Extra    map[string][]string `json:"extra"`
}

type requestJSON struct {
	ID          string          `json:"id"`
	Operation   string          `json:"operation"`
	Namespace   string          `json:"namespace"`
	Name        string          `json:"name"`
	SubResource string          `json:"subResource"`
	Resource    *gvrJSON        `json:"resource"`
	Kind        *gvkJSON        `json:"kind"`
	Object      json.RawMessage `json:"object"`
	OldObject   json.RawMessage `json:"oldObject"`
	UserInfo    *userJSON       `json:"userInfo"`
	DryRun      bool            `json:"dryRun"`
}

type setupJSON struct {
	Policies   []json.RawMessage `json:"policies"`
	Bindings   []json.RawMessage `json:"bindings"`
	Namespaces []json.RawMessage `json:"namespaces"`
	// Params: objects a policy's paramKind names (kinds of client-go's scheme).
	Params []json.RawMessage `json:"params"`
}

type fileJSON struct {
	setupJSON
	Requests []requestJSON `json:"requests"`
}

type resultJSON struct {
	ID         string   `json:"id"`
	Allowed    bool     `json:"allowed"`
	Messages   []string `json:"messages"`
	EvalErrors []string `json:"evalErrors"`
	Warnings   []string `json:"warnings,omitempty"`
	Denial     string   `json:"denial,omitempty"`
	Error      string   `json:"error,omitempty"`
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// strictUnmarshal: JSON into v, refusing unknown keys and trailing data.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func quietKlog() {
	// klog (the plugin's, client-go's and the informers' logging) writes to stderr by default; a logger that
	// discards keeps stderr to vapcheck's own one-line errors. VAPCHECK_LOG=1 keeps klog's stderr output.
	if os.Getenv("VAPCHECK_LOG") == "" {
		klog.SetLogger(logr.Discard())
	}
}

func main() {
	quietKlog()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "vapcheck: internal error: %v\n", oneLine(fmt.Sprint(r)))
			code = 1
		}
	}()
	serve, file := false, ""
	for _, a := range args {
		switch {
		case a == "--serve" || a == "-serve":
			serve = true
		case a == "-h" || a == "--help":
			fmt.Fprintln(stdout, "usage: vapcheck FILE | vapcheck --serve")
			return 0
		case strings.HasPrefix(a, "-") && a != "-":
			fmt.Fprintf(stderr, "vapcheck: unknown flag %s (usage: vapcheck FILE | vapcheck --serve)\n", a)
			return 2
		case file != "":
			fmt.Fprintln(stderr, "vapcheck: one input file only (usage: vapcheck FILE | vapcheck --serve)")
			return 2
		default:
			file = a
		}
	}
	if serve == (file != "") {
		fmt.Fprintln(stderr, "vapcheck: give either FILE or --serve (usage: vapcheck FILE | vapcheck --serve)")
		return 2
	}
	var err error
	if serve {
		err = runServe(stdin, stdout)
	} else {
		err = runFile(file, stdin, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vapcheck: %s\n", oneLine(err.Error()))
		var u usageError
		if errors.As(err, &u) {
			return 2
		}
		return 1
	}
	return 0
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func runFile(path string, stdin io.Reader, stdout io.Writer) error {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return usageError{fmt.Sprintf("cannot read %s: %v", path, err)}
	}
	var in fileJSON
	if err := strictUnmarshal(data, &in); err != nil {
		return usageError{fmt.Sprintf("%s: not vapcheck input JSON: %v", path, err)}
	}
	c, compileErrors, err := newCluster(in.setupJSON)
	if err != nil {
		return err
	}
	defer c.close()
	out := struct {
		CompileErrors []compileError `json:"compileErrors"`
		Results       []resultJSON   `json:"results"`
	}{CompileErrors: compileErrors, Results: []resultJSON{}}
	for i, req := range in.Requests {
		res := c.judge(req)
		if res.Error != "" {
			return usageError{fmt.Sprintf("%s: request %d (id %q): %s", path, i, req.ID, res.Error)}
		}
		out.Results = append(out.Results, res)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

func runServe(stdin io.Reader, stdout io.Writer) error {
	r := bufio.NewReaderSize(stdin, 1<<20)
	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	emit := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		return w.Flush()
	}
	line, err := readLine(r)
	if err == io.EOF {
		return usageError{"--serve: no setup line on stdin"}
	} else if err != nil {
		return err
	}
	var setup setupJSON
	if err := strictUnmarshal(line, &setup); err != nil {
		return usageError{fmt.Sprintf("--serve: the first line is not {\"policies\",\"bindings\",\"namespaces\"}: %v", err)}
	}
	c, compileErrors, err := newCluster(setup)
	if err != nil {
		return err
	}
	defer c.close()
	if err := emit(struct {
		Ready         bool           `json:"ready"`
		CompileErrors []compileError `json:"compileErrors"`
	}{true, compileErrors}); err != nil {
		return err
	}
	for n := 2; ; n++ {
		line, err := readLine(r)
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var req requestJSON
		if err := strictUnmarshal(line, &req); err != nil {
			return usageError{fmt.Sprintf("--serve: line %d is not a request: %v", n, err)}
		}
		if err := emit(c.judge(req)); err != nil {
			return err
		}
	}
}

// readLine: the next line without its newline; io.EOF only when nothing is left.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadBytes('\n')
	if err == io.EOF && len(line) > 0 {
		return line, nil
	}
	return bytes.TrimRight(line, "\r\n"), err
}
