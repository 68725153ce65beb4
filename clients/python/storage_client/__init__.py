"""Python client of the file storage service.

from storage_client import Client
client = Client()  # STORAGE_API_KEY and STORAGE_BASE_URL from the environment
file = client.files.upload("report.pdf", path="reports/2026")
"""

from storage_client._version import __version__
from storage_client.client import Client
from storage_client.errors import (
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    JobFailedError,
    NetworkError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitedError,
    ServerError,
    ServiceUnavailableError,
    StorageError,
    TransferError,
    UnprocessableError,
    ValidationError,
    VariantFailedError,
    WaitTimeoutError,
)
from storage_client.models import (
    BatchResult,
    Delivery,
    DeliveryEvent,
    Event,
    File,
    Folder,
    Job,
    MultipartSession,
    PresignedPart,
    PresignedUpload,
    UploadPart,
    Usage,
    UsageLimits,
    Variant,
    VariantParams,
    Webhook,
)
from storage_client.upload_tokens import UploadToken, UploadTokens

__all__ = [
    "AuthenticationError",
    "BatchResult",
    "Client",
    "ConfigurationError",
    "ConflictError",
    "Delivery",
    "DeliveryEvent",
    "Event",
    "File",
    "Folder",
    "Job",
    "JobFailedError",
    "MultipartSession",
    "NetworkError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "PresignedPart",
    "PresignedUpload",
    "RateLimitedError",
    "ServerError",
    "ServiceUnavailableError",
    "StorageError",
    "TransferError",
    "UnprocessableError",
    "UploadPart",
    "UploadToken",
    "UploadTokens",
    "Usage",
    "UsageLimits",
    "ValidationError",
    "Variant",
    "VariantFailedError",
    "VariantParams",
    "WaitTimeoutError",
    "Webhook",
    "__version__",
]
