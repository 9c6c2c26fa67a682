//! The typed IDs as SQLite text columns, so queries bind them and rows read them as they
//! are, with no text in between. A stored ID was checked when it was made, so a row's is
//! taken as it is.

use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::sqlite::{Sqlite, SqliteTypeInfo, SqliteValueRef};
use sqlx::{Database, Decode, Encode, Type};

use crate::model::ids::{AgentId, EventId, RoomId, SessionId, UserId};

/// Declares each ID type a text column.
macro_rules! id_column {
    ($($name:ident),*) => {$(
        impl Type<Sqlite> for $name {
            fn type_info() -> SqliteTypeInfo {
                <String as Type<Sqlite>>::type_info()
            }

            fn compatible(ty: &SqliteTypeInfo) -> bool {
                <String as Type<Sqlite>>::compatible(ty)
            }
        }

        impl Encode<'_, Sqlite> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut <Sqlite as Database>::ArgumentBuffer,
            ) -> Result<IsNull, BoxDynError> {
                <String as Encode<Sqlite>>::encode(self.as_str().to_owned(), buf)
            }
        }

        impl<'r> Decode<'r, Sqlite> for $name {
            fn decode(value: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
                Ok($name::new(<String as Decode<Sqlite>>::decode(value)?))
            }
        }
    )*};
}

id_column!(AgentId, EventId, RoomId, SessionId, UserId);
