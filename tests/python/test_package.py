"""The installed package: public names, version, type stubs."""

import pathlib

import mlbs


def test_public_names_and_version():
    """Every name of DESIGN §4's Python contract is exported; the version is the library's."""
    for name in ("Config", "Tier", "Runtime", "Store", "Reader", "Error", "UnknownIdError", "ShutdownError"):
        assert hasattr(mlbs, name), name
    assert issubclass(mlbs.UnknownIdError, mlbs.Error) and issubclass(mlbs.Error, Exception)
    assert mlbs.__version__.count(".") == 2


def test_type_stubs_are_installed():
    """mlbs ships py.typed and stubs of its extension with the methods' signatures."""
    pkg = pathlib.Path(mlbs.__file__).parent
    assert (pkg / "py.typed").exists()
    stub = (pkg / "_mlbs.pyi").read_text()
    assert "class Store" in stub and "def read(self, id: int, out: numpy.ndarray | None = None) -> numpy.ndarray" in stub
