from django.apps import AppConfig


class VariantsConfig(AppConfig):
    name = "variants"
