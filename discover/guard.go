package discover

import (
	"path"
	"strings"
)

// A cron line that Debian packages guard so that it does nothing on this
// host: anacron, certbot, ntpsec, php and e2fsprogs ship lines that run
// their job only where systemd is not the init system (a timer does the
// work there), or only where anacron is missing:
//
//	test -e /run/systemd/system || SERVICE_MODE=1 /sbin/e2scrub_all -A -r
//	test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.daily; }
//	[ -x /usr/lib/php/sessionclean ] && if [ ! -d /run/systemd/system ]; then /usr/lib/php/sessionclean; fi
//	test -x /usr/bin/certbot -a \! -d /run/systemd/system && perl -e 'sleep int(rand(43200))' && certbot -q renew
//
// The command is read as sh reads it, as far as these need: and-or lists,
// if/then/elif/else/fi, { } and ( ) groups, ! and test(1) expressions over
// files. A test of a file the tree shows decides; one it does not (a file
// missing from a copied tree, a variable) is unknown, and then the line may
// run. Anything else (a loop, a pipeline, any other program) may do work.

// tri is what a test comes to on this host, as far as the tree shows.
type tri int8

const (
	unknown tri = iota
	yes
	no
)

func (t tri) not() tri {
	switch t {
	case yes:
		return no
	case no:
		return yes
	}
	return unknown
}

// outcome is a test's value with the fact that decided it ("" when none).
type outcome struct {
	v   tri
	why string
}

// shList is a list of and-or lists (separated by ; or &); shAndOr is
// one and-or list: nodes joined by && or ||.
type (
	shList  []shAndOr
	shAndOr struct {
		nodes []*shNode
		ops   []string
	}
)

// shNode is one command: simple words, an if, or a group.
type shNode struct {
	words     []string // a simple command, redirections and assignments dropped
	neg       bool     // ! before it
	pipe      bool     // part of a pipeline: work
	isIf      bool
	cond      shList
	then, els shList // els nil: no else
	group     shList // { list; } or ( list ), when words is nil and isIf not set
}

// shParser reads shellWords' tokens into a shList.
type shParser struct {
	toks []token
	i    int
	bad  bool // a construct the guard reading does not follow
}

func (p *shParser) peekWord() string {
	if p.i < len(p.toks) && !p.toks[p.i].op {
		return p.toks[p.i].s
	}
	return ""
}

func (p *shParser) peekOp() string {
	if p.i < len(p.toks) && p.toks[p.i].op {
		return p.toks[p.i].s
	}
	return ""
}

// listEnds are the reserved words that end a list inside a compound
// command.
var listEnds = map[string]bool{"then": true, "elif": true, "else": true, "fi": true, "}": true, "do": true, "done": true, "esac": true}

// list reads and-or lists up to the end, a ")" or a reserved word that
// ends a list.
func (p *shParser) list() shList {
	var l shList
	for p.i < len(p.toks) && !p.bad {
		if op := p.peekOp(); op == ")" {
			break
		} else if op == ";" || op == "&" {
			p.i++
			continue
		}
		if listEnds[p.peekWord()] {
			break
		}
		l = append(l, p.andOr())
	}
	return l
}

func (p *shParser) andOr() shAndOr {
	ao := shAndOr{nodes: []*shNode{p.pipeline()}}
	for !p.bad {
		op := p.peekOp()
		if op != "&&" && op != "||" {
			break
		}
		p.i++
		ao.ops = append(ao.ops, op)
		ao.nodes = append(ao.nodes, p.pipeline())
	}
	return ao
}

func (p *shParser) pipeline() *shNode {
	neg := false
	for p.peekWord() == "!" {
		neg = !neg
		p.i++
	}
	n := p.command()
	n.neg = neg
	for p.peekOp() == "|" {
		p.i++
		p.command()
		n.pipe = true
	}
	return n
}

// command reads one command: if, a group, or a simple command.
func (p *shParser) command() *shNode {
	switch w := p.peekWord(); {
	case w == "if":
		p.i++
		return p.ifRest()
	case w == "{":
		p.i++
		n := &shNode{group: p.list()}
		p.expect("}", false)
		return n
	case p.peekOp() == "(":
		p.i++
		n := &shNode{group: p.list()}
		p.expect(")", true)
		return n
	case w == "for" || w == "while" || w == "until" || w == "case" || w == "function" || listEnds[w]:
		p.bad = true
		return &shNode{}
	}
	n := &shNode{}
	for ; p.i < len(p.toks) && !p.toks[p.i].op; p.i++ {
		w := p.toks[p.i].s
		if m := redirRE().FindStringSubmatch(w); m != nil {
			if m[3] == "" && p.i+1 < len(p.toks) && !p.toks[p.i+1].op {
				p.i++ // the target is the next word
			}
			continue
		}
		if len(n.words) == 0 && isAssignment(w) {
			continue
		}
		n.words = append(n.words, w)
	}
	if len(n.words) == 0 {
		p.bad = true // an empty command: not sh
	}
	return n
}

// ifRest reads an if after its "if" (or "elif"), up to its "fi".
func (p *shParser) ifRest() *shNode {
	n := &shNode{isIf: true, cond: p.list()}
	p.expect("then", false)
	n.then = p.list()
	switch p.peekWord() {
	case "elif":
		p.i++
		n.els = shList{{nodes: []*shNode{p.ifRest()}}}
		return n // the inner if took the fi
	case "else":
		p.i++
		n.els = p.list()
	}
	p.expect("fi", false)
	return n
}

func (p *shParser) expect(s string, op bool) {
	if p.i < len(p.toks) && p.toks[p.i].op == op && p.toks[p.i].s == s {
		p.i++
		return
	}
	p.bad = true
}

// guardReader evaluates a parsed command on a host: whether it may do
// work, and why not when it may not.
type guardReader struct {
	h   *Host
	why string // the first fact that kept work from running
}

// skipped records that a branch with work in it, or not, did not run
// because of o.
func (g *guardReader) skipped(o outcome) {
	if g.why == "" {
		g.why = o.why
	}
}

func (g *guardReader) list(l shList) (outcome, bool) {
	o := outcome{v: yes}
	for _, ao := range l {
		var work bool
		if o, work = g.andOr(ao); work {
			return o, true
		}
	}
	return o, false
}

// andOr runs an and-or list: a && b runs b only after a succeeded, a || b
// only after a failed; an unknown status may go either way.
func (g *guardReader) andOr(ao shAndOr) (outcome, bool) {
	o, work := g.node(ao.nodes[0])
	for k, op := range ao.ops {
		if work {
			return o, true
		}
		skipOn := no
		if op == "||" {
			skipOn = yes
		}
		if o.v == skipOn {
			g.skipped(o)
			continue
		}
		next, w := g.node(ao.nodes[k+1])
		work = w
		if o.v == unknown && next.v != skipOn {
			next = outcome{v: unknown} // run or not, the status is either
		}
		o = next
	}
	return o, work
}

func (g *guardReader) node(n *shNode) (outcome, bool) {
	var o outcome
	var work bool
	switch {
	case n.pipe:
		return outcome{}, true
	case n.isIf:
		o, work = g.ifNode(n)
	case n.words == nil:
		o, work = g.list(n.group)
	default:
		o, work = g.simple(n.words)
	}
	if n.neg {
		o.v = o.v.not()
	}
	return o, work
}

func (g *guardReader) ifNode(n *shNode) (outcome, bool) {
	c, work := g.list(n.cond)
	if work {
		return outcome{}, true
	}
	switch c.v {
	case yes:
		if n.els != nil {
			g.skipped(c)
		}
		return g.list(n.then)
	case no:
		g.skipped(c)
		if n.els == nil {
			return outcome{v: yes}, false // an if whose condition failed exits 0
		}
		return g.list(n.els)
	}
	_, w1 := g.list(n.then)
	_, w2 := g.list(n.els)
	return outcome{}, w1 || w2
}

// simple runs a simple command: test(1) is evaluated, true and false are
// what they say, anything else is work.
func (g *guardReader) simple(w []string) (outcome, bool) {
	switch w[0] {
	case "test":
		return g.test(w[1:]), false
	case "[":
		if w[len(w)-1] != "]" {
			return outcome{}, true // [ fails without its ]; not a guard
		}
		return g.test(w[1 : len(w)-1]), false
	case "true", ":":
		return outcome{v: yes}, false
	case "false":
		return outcome{v: no}, false
	}
	return outcome{}, true
}

// test evaluates test(1)'s arguments: ! binds tightest, then -a, then -o;
// an expression it does not read is unknown.
func (g *guardReader) test(args []string) outcome {
	t := testExpr{g: g, args: args}
	o := t.or()
	if t.i != len(args) {
		return outcome{}
	}
	return o
}

type testExpr struct {
	g    *guardReader
	args []string
	i    int
}

func (t *testExpr) or() outcome {
	o := t.and()
	for t.i < len(t.args) && t.args[t.i] == "-o" {
		t.i++
		r := t.and()
		switch {
		case o.v == yes:
		case r.v == yes || o.v == no:
			o = r
		}
	}
	return o
}

func (t *testExpr) and() outcome {
	o := t.not()
	for t.i < len(t.args) && t.args[t.i] == "-a" {
		t.i++
		r := t.not()
		switch {
		case o.v == no:
		case r.v == no || o.v == yes:
			o = r
		}
	}
	return o
}

func (t *testExpr) not() outcome {
	if t.i < len(t.args) && t.args[t.i] == "!" {
		t.i++
		o := t.not()
		o.v = o.v.not()
		return o
	}
	return t.primary()
}

// testBinary are test(1)'s binary operators, read and left unknown.
var testBinary = map[string]bool{"=": true, "==": true, "!=": true, "-eq": true, "-ne": true, "-lt": true, "-le": true, "-gt": true, "-ge": true, "-nt": true, "-ot": true, "-ef": true}

func (t *testExpr) primary() outcome {
	rest := t.args[t.i:]
	switch {
	case len(rest) == 0:
		return outcome{}
	case rest[0] == "(":
		t.i++
		o := t.or()
		if t.i < len(t.args) && t.args[t.i] == ")" {
			t.i++
			return o
		}
		t.i = len(t.args) + 1 // unbalanced: unread
		return outcome{}
	case len(rest) >= 3 && testBinary[rest[1]]:
		t.i += 3
		return outcome{}
	case len(rest) >= 2 && len(rest[0]) == 2 && rest[0][0] == '-':
		t.i += 2
		return t.g.fileTest(rest[0], rest[1])
	}
	t.i++ // a string alone: true when not empty, which a word with $ may be
	return outcome{}
}

// The facts a guard can rest on, as its finding words them.
const (
	whySystemd   = "it runs only where systemd is not the init system (a timer does the work here)"
	whyNoSystemd = "it runs only where systemd is the init system, which it is not here"
)

// fileTest evaluates test -e, -d, -f or -x of a file. /run/systemd/system
// is systemd's mark of being the init system: true where the tree shows
// systemd. Another file the tree holds is there; one it lacks may only be
// missing from the tree, so it is unknown.
func (g *guardReader) fileTest(op, p string) outcome {
	switch op {
	case "-e", "-d", "-f", "-x":
	default:
		return outcome{}
	}
	if path.Clean(p) == "/run/systemd/system" {
		switch {
		case op == "-f":
			return outcome{} // a directory; nobody tests it so
		case g.h.systemdInit():
			return outcome{v: yes, why: whySystemd}
		}
		return outcome{v: no, why: whyNoSystemd}
	}
	if !path.IsAbs(p) || strings.ContainsAny(p, "$`*?[") {
		return outcome{}
	}
	here := exists(g.h.Root, p)
	switch op {
	case "-d":
		here = isDir(g.h.Root, p)
	case "-f":
		here = isRegular(g.h.Root, p)
	}
	if !here {
		return outcome{}
	}
	return outcome{v: yes, why: "it runs only when " + p + " is missing, and it is here (e.g. anacron runs cron.daily)"}
}

// systemdInit reports a host whose init system is systemd.
func (h *Host) systemdInit() bool {
	return exists(h.Root, "/run/systemd/system") || exists(h.Root, "/lib/systemd/systemd") || exists(h.Root, "/usr/lib/systemd/systemd")
}

// noOp says why a cron command does nothing on this host, or "".
func (h *Host) noOp(cmd string) string {
	p := shParser{toks: shellWords(cmd)}
	l := p.list()
	if p.bad || p.i != len(p.toks) || len(l) == 0 {
		return ""
	}
	g := guardReader{h: h}
	if _, work := g.list(l); work {
		return ""
	}
	return g.why
}
