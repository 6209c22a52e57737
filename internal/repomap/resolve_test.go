package repomap

import (
	"strings"
	"testing"
)

func TestResolveImports(t *testing.T) {
	root := writeTree(t, map[string]string{
		"go.mod":                                 "module example.com/r\n",
		"pkg/util/util.go":                       "package util\n",
		"cmd/tool/main.go":                       "package main\n\nimport (\n\t\"fmt\"\n\t\"example.com/r/pkg/util\"\n)\n",
		"src/main/java/com/acme/App.java":        "package com.acme;\nimport com.acme.model.User;\nimport static com.acme.model.User.create;\nimport java.util.List;\nclass App {}\n",
		"src/main/java/com/acme/model/User.java": "package com.acme.model;\npublic class User {}\n",
		"web/lib/math.ts":                        "export const one = 1\n",
		"web/lib/index.ts":                       "export * from './math'\n",
		"web/main.ts":                            "import { one } from './lib'\nimport x from './lib/math.js'\nimport React from 'react'\n",
		"py/pkg/__init__.py":                     "",
		"py/pkg/core.py":                         "import os\nfrom pkg import sub\nfrom .. import top\n",
		"py/pkg/sub.py":                          "",
		"py/top.py":                              "",
		"rs/src/main.rs":                         "mod a;\nuse crate::a::b::Thing;\nfn main() {}\n",
		"rs/src/a.rs":                            "pub mod b;\n",
		"rs/src/a/b.rs":                          "pub struct Thing;\n",
		"c/include/lib.h":                        "int f(void);\n",
		"c/src/lib.c":                            "#include \"lib.h\"\n#include <stdio.h>\n",
	})
	m := build(t, Options{Root: root})
	tests := map[string]string{
		"cmd/tool/main.go":                "pkg/util",
		"src/main/java/com/acme/App.java": "src/main/java/com/acme/model/User.java",
		"web/main.ts":                     "web/lib/index.ts web/lib/math.ts",
		"web/lib/index.ts":                "web/lib/math.ts",
		"py/pkg/core.py":                  "py/pkg/__init__.py py/pkg/sub.py py/top.py",
		"rs/src/main.rs":                  "rs/src/a.rs rs/src/a/b.rs",
		"rs/src/a.rs":                     "rs/src/a/b.rs",
		"c/src/lib.c":                     "c/include/lib.h",
	}
	for file, want := range tests {
		t.Run(file, func(t *testing.T) {
			f := fileOf(m, file)
			if f == nil {
				t.Fatalf("%s not mapped; have %v", file, paths(m))
			}
			if got := strings.Join(f.Imports, " "); got != want {
				t.Errorf("imports = %q, want %q", got, want)
			}
		})
	}
}
