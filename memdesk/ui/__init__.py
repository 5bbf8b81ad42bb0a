"""The Qt window. The only package that imports PySide6; everything here adapts the Qt-free core."""
