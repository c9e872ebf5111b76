"""The workflow's papermill entry point (servesim.analysis.papermill_run): papermill's command line
with jsonschema's optional format checkers kept out of the import."""

import asyncio
import json
import os
import subprocess
import sys

import nbformat

from tests.conftest import pythonpath_env


def test_runs_a_notebook_with_injected_parameters_and_skips_the_iri_checker(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("import sys\nprint(x * 10)"),
                # the kernel is reached over Unix sockets (kernel_ipc: no TCP port to collide on)
                nbformat.v4.new_code_cell("import json\nfrom ipykernel.connect import get_connection_info\n"
                                          "print('transport', json.loads(get_connection_info())['transport'])")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    src, out = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    nbformat.write(nb, src)
    code = ("import sys, runpy; sys.argv = ['papermill'] + sys.argv[1:]\n"
            "try:\n    runpy.run_module('servesim.analysis.papermill_run', run_name='__main__')\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "print('IRI', sys.modules.get('rfc3987_syntax', 'absent'))")
    r = subprocess.run([sys.executable, "-c", code, "-k", "python3", "--no-progress-bar", "--log-level", "WARNING",
                        str(src), str(out), "-y", json.dumps({"x": 4})],
                       capture_output=True, text=True, env=pythonpath_env(), timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "IRI None" in r.stdout or "IRI absent" in r.stdout
    done = nbformat.read(out, as_version=4)
    printed = "".join(o.get("text", "") for c in done.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "40" in printed
    assert "transport ipc" in printed


def test_the_kernel_is_stopped_at_once_and_the_last_cell_loses_nothing(tmp_path, monkeypatch):
    """execute_notebook asks for an immediate stop (the graceful one can hang 2.5 s) unless told
    otherwise, and a last cell's file and output are all there when the kernel is killed."""
    import papermill

    from servesim.analysis import kernel_ipc

    seen = {}
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: seen.update(k))
    kernel_ipc.execute_notebook("in.ipynb", "out.ipynb")
    assert seen["shutdown_kernel"] == "immediate" and seen["kernel_manager_class"] is kernel_ipc.IpcKernelManager
    kernel_ipc.execute_notebook("in.ipynb", "out.ipynb", shutdown_kernel="graceful")
    assert seen["shutdown_kernel"] == "graceful"
    monkeypatch.undo()
    nb = nbformat.v4.new_notebook()
    target = tmp_path / "last.txt"
    nb.cells = [nbformat.v4.new_code_cell(f"open({str(target)!r}, 'w').write('x' * 100000)\nprint('done', 7 * 6)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    src, out = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    nbformat.write(nb, src)
    kernel_ipc.execute_notebook(str(src), str(out), kernel_name="python3", progress_bar=False)
    assert target.read_text() == "x" * 100000
    done = nbformat.read(out, as_version=4)
    assert "done 42" in "".join(o.get("text", "") for o in done.cells[0].outputs)


def test_ipc_kernel_sockets_live_in_a_folder_of_their_own_removed_at_shutdown():
    from servesim.analysis.kernel_ipc import IpcKernelManager

    a, b = IpcKernelManager(kernel_name="python3"), IpcKernelManager(kernel_name="python3")
    assert a.transport == "ipc" and a.ip != b.ip  # two managers never share a socket name
    folder = a._ipc_dir
    assert os.path.isdir(folder) and a.ip.startswith(folder)
    asyncio.run(a.cleanup_resources())
    assert not os.path.exists(folder)
    asyncio.run(b.cleanup_resources(restart=True))  # a restart keeps the folder for the new sockets
    assert os.path.isdir(b._ipc_dir)
    asyncio.run(b.cleanup_resources())
    assert not os.path.exists(b._ipc_dir)


def test_jsonschema_lite_validates_without_its_format_checkers():
    """The workflow's schemas validate as before; jsonschema's optional format packages stay out."""
    code = ("import sys\nfrom servesim.analysis import jsonschema_lite as j\n"
            "v = j.Draft202012Validator({'type': 'object', 'required': ['a']})\n"
            "assert v.is_valid({'a': 1}) and not v.is_valid({})\n"
            "assert j.best_match(v.iter_errors({})).validator == 'required'\n"
            "print(sorted(m for m in j.FORMAT_CHECKERS if sys.modules.get(m) is not None))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=pythonpath_env(), timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "[]"
