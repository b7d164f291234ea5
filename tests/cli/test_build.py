"""Build options and install rules: `cmake --install` lays out a working program with its schemas
and example specs; KT_MARCH and KT_WERROR reach the compile lines; an aarch64 configure does not
fail on the x86 flags."""
import filecmp
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from ktrial_cli import SOURCE

BUILD = os.environ.get("KT_BUILD_DIR", os.path.join(SOURCE, "build"))
CMAKE = shutil.which("cmake") or "cmake"


def configure(build, *options):
    return subprocess.run([CMAKE, "-S", SOURCE, "-B", build, "-DKT_CUDA=OFF",
                           "-DKT_BUILD_TESTS=OFF", *options],
                          capture_output=True, text=True, timeout=600)


def compile_lines(build, folder):
    """The compile commands of the C sources under SOURCE/folder in that build."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    root = os.path.join(os.path.realpath(SOURCE), folder) + os.sep
    return [e["command"] for e in entries
            if os.path.realpath(e["file"]).startswith(root) and e["file"].endswith(".c")]


class InstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kt-install-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        cls.install = subprocess.run([CMAKE, "--install", BUILD, "--prefix", cls.prefix],
                                     capture_output=True, text=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_install_succeeds(self):
        self.assertEqual(self.install.returncode, 0, self.install.stderr)

    def test_binary_runs_from_the_prefix(self):
        binary = os.path.join(self.prefix, "bin", "ktrial")
        self.assertTrue(os.access(binary, os.X_OK), binary)
        p = subprocess.run([binary, "--version"], capture_output=True, text=True, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^ktrial \d+\.\d+\.\d+")

    def test_no_runpath_searches_the_current_folder(self):
        # an empty RUNPATH entry ("dir:") makes the loader look for ktrial's libraries in the
        # folder it is run from; CMake 3.25 wrote one into the build tree's ktrial
        for binary in (os.path.join(BUILD, "ktrial"), os.path.join(self.prefix, "bin", "ktrial")):
            p = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            for m in re.finditer(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.*)\]",
                                 p.stdout):
                entries = m.group(1).split(":")
                self.assertNotIn("", entries, f"{binary}: {m.group(0)}")
                self.assertFalse(any(e == "." or e.startswith("$ORIGIN/..") for e in entries))

    def test_schemas_are_the_source_files(self):
        sources = sorted(glob.glob(os.path.join(SOURCE, "schemas", "*.json")))
        self.assertGreaterEqual(len(sources), 3)
        for src in sources:
            dst = os.path.join(self.prefix, "share", "ktrial", "schemas", os.path.basename(src))
            self.assertTrue(filecmp.cmp(src, dst, shallow=False), dst)

    def test_installed_examples_validate_and_find_their_schema(self):
        share = os.path.join(self.prefix, "share", "ktrial", "experiments")
        specs = sorted(glob.glob(os.path.join(share, "**", "*.yaml"), recursive=True))
        sources = glob.glob(os.path.join(SOURCE, "experiments", "**", "*.yaml"), recursive=True)
        self.assertEqual(len(specs), len(sources))
        binary = os.path.join(self.prefix, "bin", "ktrial")
        for spec in specs:
            with open(spec) as f:
                first = f.readline()
            m = re.match(r"# yaml-language-server: \$schema=(\S+)", first)
            if m:
                target = os.path.normpath(os.path.join(os.path.dirname(spec), m.group(1)))
                self.assertTrue(os.path.isfile(target), f"{spec}: {m.group(1)}")
        quickstart = os.path.join(share, "quickstart.yaml")
        p = subprocess.run([binary, "validate", "--backend", "cpu", quickstart],
                           capture_output=True, text=True, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_only_the_plugin_header_and_no_library(self):
        # ktrial is a program: the one public header is the plugin ABI (include/ktrial/plugin.h,
        # component plugin-dev, with its pkg-config file); kernels/kernel.h stays in the tree
        include = os.path.join(self.prefix, "include")
        if os.path.exists(include):
            self.assertEqual(sorted(os.listdir(include)), ["ktrial"])
            self.assertEqual(sorted(os.listdir(os.path.join(include, "ktrial"))), ["plugin.h"])
        libs = [os.path.join(d, f) for d, _, fs in os.walk(self.prefix) for f in fs
                if f.endswith((".a", ".so")) or ".so." in f]
        self.assertEqual(libs, [])


class OptionsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt-configure-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_default_build_has_march_and_werror(self):
        with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
            cache = f.read()
        march = re.search(r"^KT_MARCH:STRING=(.*)$", cache, re.M).group(1)
        werror = re.search(r"^KT_WERROR:BOOL=(.*)$", cache, re.M).group(1)
        # the kernel library's sources; kernels/process/exec/ is kt_exec, a program of its own
        # that starts commands and needs no ISA of the kernels
        exec_dir = os.path.join(os.path.realpath(SOURCE), "kernels", "process", "exec") + os.sep
        kernels = [c for c in compile_lines(BUILD, "kernels") if exec_dir not in c]
        runner = compile_lines(BUILD, "runner")
        self.assertTrue(kernels and runner)
        if march:
            self.assertTrue(all(f"-march={march}" in c for c in kernels))
        self.assertFalse(any("-march" in c for c in runner))
        if werror.upper() in ("ON", "TRUE", "1"):
            self.assertTrue(all("-Werror" in c for c in runner))

    def test_aarch64_configure_adds_no_x86_flag(self):
        build = os.path.join(self.tmp, "arm")
        p = configure(build, "-DCMAKE_SYSTEM_NAME=Linux", "-DCMAKE_SYSTEM_PROCESSOR=aarch64",
                      "-DKT_WERROR=OFF")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = compile_lines(build, "kernels") + compile_lines(build, "runner")
        self.assertTrue(lines)
        self.assertFalse([c for c in lines if "-march" in c or "-Werror" in c])
        self.assertIn("KT_MARCH=)", p.stdout)

    def test_empty_march_on_x86_is_a_clear_error(self):
        if not re.match(r"^(x86_64|AMD64|amd64)$", os.uname().machine):
            raise unittest.SkipTest("not an x86_64 host")
        p = configure(os.path.join(self.tmp, "x86"), "-DKT_MARCH=")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("need AVX2, FMA and F16C", " ".join(p.stderr.split()))


if __name__ == "__main__":
    unittest.main()
