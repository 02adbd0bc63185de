# Test stand-in for the opentelemetry-semantic-conventions package, which the package mirror
# lacks and wandb imports only for its own telemetry: every submodule exists, UPPER names are
# dotted strings and CamelCase names are classes of such names.
import importlib.abc, importlib.machinery, sys, types

def _value(name):
    if name.startswith("__"):
        raise AttributeError(name)
    if name[:1].isupper() and not name.isupper():
        return _names_class(name)
    return name.lower().replace("_", ".")

class _Names(type):
    def __getattr__(cls, name):
        return _value(name)

def _names_class(name):
    return _Names(name, (), {})

class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.startswith(__name__ + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None
    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = _value
        return module
    def exec_module(self, module):
        pass

sys.meta_path.insert(0, _Finder())
__getattr__ = _value
